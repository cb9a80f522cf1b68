/*
 * server/www.h — the playground's files, compiled into the binary (server/www.S).
 *
 *   GET /                 index.html   text/html; charset=utf-8
 *   GET /playground.js    app.js       text/javascript; charset=utf-8
 *   GET /playground.css   app.css      text/css; charset=utf-8
 *   GET /playground-headview.js  headview.js  the head view (bertviz's, drawn here)
 *   GET /playground-fields.js    fields.js    multi-head fields kept in step with the JSON
 *   GET /favicon.svg, /favicon.ico  favicon.svg  image/svg+xml
 *
 * Each is answered with a Content-Security-Policy that allows this origin only
 * (no inline script or style, no other host), so the page runs nothing it did not
 * ship with. The page itself calls the API with fetch.
 *
 * Not here: routing of the API (api/), the page's logic (server/www/app.js).
 */
#ifndef SRV_WWW_H
#define SRV_WWW_H

#include <stdbool.h>
#include <stddef.h>

#include "api/api.h"

#define SRV_WWW_CSP "default-src 'self'; base-uri 'none'; form-action 'none'; " \
                    "frame-ancestors 'none'; object-src 'none'"

/*
 * Tells api/ the files' paths (api_route_add_file), once before serving: its router
 * answers their wrong methods and lists the page in its 404. False if api/ refuses one.
 */
bool srv_www_route(void);

/*
 * When path names a playground file, fills res with it (200, its type, the
 * security headers, a copy of the bytes; 503 if the copy cannot be made, in the
 * language req asks for) and returns true. Otherwise returns false and leaves res alone.
 */
bool srv_www_respond(const char *path, const struct api_request *req, struct api_response *res);

#endif
