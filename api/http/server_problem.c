/*
 * api/http/server_problem.c — the server's own problems in the request's language
 * (see server_problem.h).
 */
#include "api/http/server_problem.h"

#include <stdarg.h>
#include <stdio.h>

#include "api/http/admission.h"
#include "api/http/language.h"
#include "api/i18n/lang.h"

/* The language req asks for, made the thread's: English without a request or for a
   ?lang attnd lacks (the answer is about the request's framing, not its language). */
static enum api_lang speak_as(const struct api_request *req)
{
    enum api_lang lang = API_LANG_EN;
    struct api_error unused;
    if (req != NULL && !api_lang_negotiate(req, &lang, &unused))
        lang = API_LANG_EN;
    api_lang_set_current(lang);
    return lang;
}

/* Writes err in the form its path's clients read (V2's "error" under /v2), says which
   language it speaks, and gives the thread back its English. */
static void respond_in(struct api_response *res, const struct api_request *req,
                       const struct api_error *err, enum api_lang lang)
{
    api_respond_error_as(res, err, api_error_style_of_path(req != NULL ? req->path : NULL));
    api_lang_headers(res, lang);
    api_lang_set_current(API_LANG_EN);
}

void api_respond_server_problem(struct api_response *res, const struct api_request *req,
                                enum api_problem_type type, const char *fmt, ...)
{
    enum api_lang lang = speak_as(req);
    char detail[sizeof ((struct api_error *)0)->detail];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, api_tr(fmt), ap);
    va_end(ap);
    /* Through api_error_set, so that whatever it does to a sentence once its values are
       in (in every language) is done to the server's too. */
    struct api_error err;
    api_error_set(&err, type, "%s", detail);
    respond_in(res, req, &err, lang);
}

void api_respond_server_reason(struct api_response *res, const struct api_request *req,
                               enum api_problem_type type, const char *reason)
{
    enum api_lang lang = speak_as(req);
    struct api_error err;
    api_error_set(&err, type, "%s", api_tr(reason));
    respond_in(res, req, &err, lang);
}

void api_respond_server_over_budget(struct api_response *res, const struct api_request *req,
                                    size_t bytes)
{
    enum api_lang lang = speak_as(req);
    struct api_error err;
    api_error_over_budget(&err, bytes);
    respond_in(res, req, &err, lang);
}
