/*
 * api/i18n/messages.h — the message tables: every sentence attnd says in English (the
 * catalogue, messages_en.c), and one table per other language whose rows pair that
 * English with its translation (messages_ko.c). See lang.h for how they are used.
 *
 * Adding a message: write it in English inside API_TR("...") where it is said, add the
 * same English as a row of messages_en.c, and a row {English, translation} to each other
 * table. check_lang fails until every table has it, with the same printf conversions.
 */
#ifndef API_I18N_MESSAGES_H
#define API_I18N_MESSAGES_H

#include <stddef.h>

/* The most rows a language's table may have (api/i18n/lang.c's sorted index). */
#define API_MESSAGES_MAX 2048

struct api_message {
    const char *en;   /* the English, as the code writes it: the key */
    const char *text; /* the same message in the table's language */
};

extern const char *const api_messages_en[];
extern const size_t api_messages_en_count;

extern const struct api_message api_messages_ko[];
extern const size_t api_messages_ko_count;

#endif
