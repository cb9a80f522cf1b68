/*
 * api/i18n/lang.h — the language an answer speaks: English, or Korean in the lecture
 * notes' own words, chosen per request (http/language.h: ?lang or Accept-Language);
 * English by default and for any language attnd lacks.
 *
 * Every sentence attnd says is written in English at the place that says it, inside
 * API_TR("..."), and that English is the key of the other languages' tables
 * (api/i18n/messages_<lang>.c: one row per message). The compiler checks a message's
 * printf arguments against the English; a unit test checks that every catalogued message
 * (api/i18n/messages_en.c) has a row in every other table with the same conversions, so a
 * missing translation fails a test, never a request: at run time it falls back to English.
 *
 * The language is the calling thread's for the request it is answering (api_handle sets
 * it): every message of an answer is made on that thread, and passing it through every
 * reader and writer would touch each of them for one word.
 *
 * Not here: choosing the language from a request (http/language.h), which words a
 * message uses (the tables); field names, type URIs and step names, which stay as they
 * are in every language.
 */
#ifndef API_I18N_LANG_H
#define API_I18N_LANG_H

#include <stdbool.h>

enum api_lang { API_LANG_EN = 0, API_LANG_KO, API_LANG_COUNT };

/* "en", "ko": the Content-Language of an answer in lang. */
const char *api_lang_code(enum api_lang lang);

/* The language of the request this thread is answering (English until one is set). */
enum api_lang api_lang_current(void);
void api_lang_set_current(enum api_lang lang);

/*
 * msgid (English, the key) in the current language: its row in that language's table,
 * or msgid itself when there is none. The result is a static string.
 */
const char *api_tr(const char *msgid) __attribute__((format_arg(1)));
#define API_TR(msgid) api_tr(msgid)

/* msgid in lang, as api_tr does for the current language. */
const char *api_tr_in(enum api_lang lang, const char *msgid) __attribute__((format_arg(2)));

#endif
