/*
 * server/www.S — the playground (server/www/), linked in as read-only bytes so
 * the binary serves it with no files at run time. Each blob is followed by a NUL
 * byte; its length is end - start.
 */
    .section .rodata
    .balign 16

    .global srv_www_index_html
    .global srv_www_index_html_end
srv_www_index_html:
    .incbin "server/www/index.html"
srv_www_index_html_end:
    .byte 0

    .balign 16
    .global srv_www_app_js
    .global srv_www_app_js_end
srv_www_app_js:
    /* teach.js (explain, pitfalls, the colour scale) first, then the page's app.js,
     * then words.js (the run-time sentences in each language, and its rows of app.js's
     * tables): one script, so the page and its Content-Security-Policy stay as they are. */
    .incbin "server/www/teach.js"
    .incbin "server/www/app.js"
    .incbin "server/www/words.js"
srv_www_app_js_end:
    .byte 0

    .balign 16
    .global srv_www_app_css
    .global srv_www_app_css_end
srv_www_app_css:
    .incbin "server/www/app.css"
srv_www_app_css_end:
    .byte 0

    .balign 16
    .global srv_www_headview_js
    .global srv_www_headview_js_end
srv_www_headview_js:
    .incbin "server/www/headview.js"
srv_www_headview_js_end:
    .byte 0

    .balign 16
    .global srv_www_fields_js
    .global srv_www_fields_js_end
srv_www_fields_js:
    .incbin "server/www/fields.js"
srv_www_fields_js_end:
    .byte 0

    .balign 16
    .global srv_www_favicon_svg
    .global srv_www_favicon_svg_end
srv_www_favicon_svg:
    .incbin "server/www/favicon.svg"
srv_www_favicon_svg_end:
    .byte 0

    .section .note.GNU-stack,"",@progbits
