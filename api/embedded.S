/*
 * api/embedded.S — files the binary serves, linked in as read-only bytes so the
 * server needs no files at run time. Each blob is followed by a NUL byte and
 * its length is end - start (without the NUL).
 */
    .section .rodata
    .balign 16

    .global api_openapi_yaml
    .global api_openapi_yaml_end
api_openapi_yaml:
    .incbin "api/openapi.yaml"
api_openapi_yaml_end:
    .byte 0

    .balign 16
    .global api_openapi_json
    .global api_openapi_json_end
api_openapi_json:
    .incbin "openapi.json"
api_openapi_json_end:
    .byte 0

    .section .note.GNU-stack,"",@progbits
