/*
 * api/http/language.c — the language of an exchange: asked for, and said (see
 * language.h).
 */
#include "api/http/language.h"

#include <stdio.h>
#include <string.h>

#include "api/i18n/choice.h"

bool api_lang_negotiate(const struct api_request *req, enum api_lang *lang,
                        struct api_error *err)
{
    *lang = API_LANG_EN;
    const char *asked = api_request_param(req, "lang");
    if (asked != NULL) {
        if (api_lang_of_tag(asked, strlen(asked), lang))
            return true;
        api_error_set(err, API_INVALID_VALUE, "lang \"%.40s\" is not a language attnd speaks; "
                      "use en or ko", asked);
        snprintf(err->parameter, sizeof err->parameter, "lang");
        api_error_hint(err, "leave lang out for English, or send Accept-Language");
        return false;
    }
    if (req->accept_language != NULL && !api_lang_of_accept(req->accept_language, lang))
        *lang = API_LANG_EN;
    return true;
}

void api_lang_headers(struct api_response *res, enum api_lang lang)
{
    if (res->deferred)
        return;
    api_response_add_header(res, "Content-Language", api_lang_code(lang));
    api_response_add_header(res, "Vary", "Accept-Language");
}
