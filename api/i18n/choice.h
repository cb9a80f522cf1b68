/*
 * api/i18n/choice.h — which of attnd's languages a language tag or an Accept-Language
 * value names (RFC 9110 §12.5.4, with its q values; RFC 5646's primary subtag: ko-KR is
 * ko). Pure functions over the text: where it comes from (?lang, the header) and what a
 * request is told when it names none is http/language.h's.
 */
#ifndef API_I18N_CHOICE_H
#define API_I18N_CHOICE_H

#include <stdbool.h>
#include <stddef.h>

#include "api/i18n/lang.h"

/* The language whose code is the primary subtag of tag[0, len), if attnd has it. */
bool api_lang_of_tag(const char *tag, size_t len, enum api_lang *out);

/*
 * The most preferred language of an Accept-Language value that attnd has (a tie: the
 * one listed first; q=0 or a q that does not read as 0..1: not acceptable; "*":
 * English). False when none is.
 */
bool api_lang_of_accept(const char *value, enum api_lang *out);

#endif
