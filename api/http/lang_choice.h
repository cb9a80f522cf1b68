/*
 * api/http/lang_choice.h — the language a request asks for: ?lang (which wins, as ?format
 * does) or Accept-Language with its q values (RFC 9110 §12.5.4); English by default and
 * for any language attnd lacks.
 */
#ifndef API_HTTP_LANG_CHOICE_H
#define API_HTTP_LANG_CHOICE_H

#include <stdbool.h>

#include "api/http/context.h"
#include "api/http/lang.h"
#include "api/http/problem.h"

/*
 * The language req asks for: ?lang (en or ko, a region allowed: ko-KR) when given, else
 * the most preferred of Accept-Language's languages attnd has (a tie: the one listed
 * first; q=0: not acceptable; "*": English), else English. False for a ?lang attnd lacks
 * (?lang=fr), with err a 422 invalid-value naming `lang`.
 */
bool api_lang_negotiate(const struct api_request *req, enum api_lang *lang,
                        struct api_error *err);

#endif
