/*
 * api/http/language.h — the language of an exchange: the one a request asks for, ?lang
 * (which wins, as ?format does) or Accept-Language with its q values (RFC 9110 §12.5.4),
 * English by default and for any language attnd lacks; and the headers that say which
 * one an answer speaks. How a tag or the header's value is read is i18n/choice.h's.
 */
#ifndef API_HTTP_LANGUAGE_H
#define API_HTTP_LANGUAGE_H

#include <stdbool.h>

#include "api/http/context.h"
#include "api/http/problem.h"
#include "api/http/response.h"
#include "api/i18n/lang.h"

/*
 * The language req asks for: ?lang (en or ko, a region allowed: ko-KR) when given, else
 * the most preferred of Accept-Language's languages attnd has (a tie: the one listed
 * first; q=0: not acceptable; "*": English), else English. False for a ?lang attnd lacks
 * (?lang=fr), with err a 422 invalid-value naming `lang`.
 */
bool api_lang_negotiate(const struct api_request *req, enum api_lang *lang,
                        struct api_error *err);

/* Content-Language and Vary: Accept-Language on res (not on a deferred one). */
void api_lang_headers(struct api_response *res, enum api_lang lang);

#endif
