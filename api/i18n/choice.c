/*
 * api/i18n/choice.c — language tags and Accept-Language read into a language (see
 * choice.h).
 */
#include "api/i18n/choice.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool api_lang_of_tag(const char *tag, size_t len, enum api_lang *out)
{
    size_t primary = 0;
    while (primary < len && tag[primary] != '-')
        primary++;
    for (int i = 0; i < API_LANG_COUNT; i++) {
        const char *code = api_lang_code((enum api_lang)i);
        if (primary == strlen(code) && strncasecmp(tag, code, primary) == 0) {
            *out = (enum api_lang)i;
            return true;
        }
    }
    return false;
}

/* The weight of one Accept-Language element's parameters (";q=0.5"); 1 without q. */
static double weight_of(const char *params, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++) {
        if ((params[i] == 'q' || params[i] == 'Q') && params[i + 1] == '=') {
            char num[8] = "";
            size_t n = 0;
            for (size_t j = i + 2; j < len && n + 1 < sizeof num && params[j] != ' '; j++)
                num[n++] = params[j];
            char *end;
            double q = strtod(num, &end);
            /* A weight that does not read as 0..1 counts as not acceptable. */
            return end != num && *end == '\0' && q >= 0 && q <= 1 ? q : 0;
        }
    }
    return 1;
}

bool api_lang_of_accept(const char *value, enum api_lang *out)
{
    double best = 0;
    bool found = false;
    for (const char *p = value; *p != '\0';) {
        size_t len = strcspn(p, ",");
        const char *elem = p;
        p += len + (p[len] == ',');
        while (len > 0 && (*elem == ' ' || *elem == '\t'))
            elem++, len--;
        size_t tag = 0;
        while (tag < len && elem[tag] != ';' && elem[tag] != ' ' && elem[tag] != '\t')
            tag++;
        double q = weight_of(elem + tag, len - tag);
        enum api_lang lang;
        /* "*" is any language: English, attnd's own. */
        bool known = (tag == 1 && elem[0] == '*') ? (lang = API_LANG_EN, true)
                                                  : api_lang_of_tag(elem, tag, &lang);
        /* Earlier wins a tie: the client listed it first. */
        if (known && q > best) {
            best = q;
            *out = lang;
            found = true;
        }
    }
    return found;
}
