/*
 * api/http/lang.c — choosing the language, and saying a message in it (see lang.h).
 */
#include "api/http/lang.h"

#include <string.h>

#include "api/http/messages.h"

static const char *const codes[API_LANG_COUNT] = { [API_LANG_EN] = "en", [API_LANG_KO] = "ko" };

static _Thread_local enum api_lang current = API_LANG_EN;

const char *api_lang_code(enum api_lang lang)
{
    return (unsigned)lang < API_LANG_COUNT ? codes[lang] : codes[API_LANG_EN];
}

enum api_lang api_lang_current(void)
{
    return current;
}

void api_lang_set_current(enum api_lang lang)
{
    current = (unsigned)lang < API_LANG_COUNT ? lang : API_LANG_EN;
}

void api_lang_headers(struct api_response *res, enum api_lang lang)
{
    if (res->deferred)
        return;
    api_response_add_header(res, "Content-Language", api_lang_code(lang));
    api_response_add_header(res, "Vary", "Accept-Language");
}

const char *api_tr_in(enum api_lang lang, const char *msgid)
{
    if (lang != API_LANG_KO || msgid == NULL)
        return msgid;
    for (size_t i = 0; i < api_messages_ko_count; i++)
        if (strcmp(api_messages_ko[i].en, msgid) == 0)
            return api_messages_ko[i].text;
    return msgid;
}

const char *api_tr(const char *msgid)
{
    return api_tr_in(current, msgid);
}
