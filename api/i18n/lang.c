/*
 * api/i18n/lang.c — the current language, and a message said in it (see lang.h).
 */
#include "api/i18n/lang.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/i18n/messages.h"

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

/*
 * The Korean rows in strcmp order of their English, sorted once by the first lookup:
 * every sentence a Korean answer says is looked up, and a row-by-row search compared
 * it with up to 640 keys. The table itself stays in the order its translators keep it.
 */
static const struct api_message *ko_sorted[API_MESSAGES_MAX];
static size_t ko_sorted_n; /* 0 until sorted, or when the table outgrew the index */
static pthread_once_t ko_once = PTHREAD_ONCE_INIT;

static int by_english(const void *a, const void *b)
{
    const struct api_message *const *x = a, *const *y = b;
    return strcmp((*x)->en, (*y)->en);
}

static void ko_sort(void)
{
    if (api_messages_ko_count > API_MESSAGES_MAX)
        return; /* check_lang fails first; until then, looked up row by row */
    for (size_t i = 0; i < api_messages_ko_count; i++)
        ko_sorted[i] = &api_messages_ko[i];
    qsort(ko_sorted, api_messages_ko_count, sizeof ko_sorted[0], by_english);
    ko_sorted_n = api_messages_ko_count;
}

static const struct api_message *ko_row(const char *msgid)
{
    pthread_once(&ko_once, ko_sort);
    if (ko_sorted_n == 0) {
        for (size_t i = 0; i < api_messages_ko_count; i++)
            if (strcmp(api_messages_ko[i].en, msgid) == 0)
                return &api_messages_ko[i];
        return NULL;
    }
    const struct api_message key = { msgid, NULL }, *k = &key;
    const struct api_message *const *hit =
        bsearch(&k, ko_sorted, ko_sorted_n, sizeof ko_sorted[0], by_english);
    return hit != NULL ? *hit : NULL;
}

const char *api_tr_in(enum api_lang lang, const char *msgid)
{
    if (lang != API_LANG_KO || msgid == NULL)
        return msgid;
    const struct api_message *row = ko_row(msgid);
    return row != NULL ? row->text : msgid;
}

const char *api_tr(const char *msgid)
{
    return api_tr_in(current, msgid);
}
