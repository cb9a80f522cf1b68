/*
 * tests/fuzz/fuzz_lang.c — libFuzzer harness for the language a request asks for
 * (api/http/language.h) and the query-parameter check (api/request/query.h).
 *
 * Input: bytes up to the first NUL are an Accept-Language header; the rest, when
 * present, is a ?lang value (another NUL: no ?lang), then query parameter names, one
 * a line, for api_check_query.
 * Properties:
 *   - with no ?lang the negotiation never fails, and gives Korean only when the header
 *     holds a "ko" tag (ASCII case-insensitive) with no weight of 0 on it;
 *   - a ?lang gives Korean exactly when its primary subtag is "ko", English when it is
 *     "en", and otherwise fails with a 422 invalid-value naming `lang`;
 *   - the same input gives the same answer twice;
 *   - api_check_query refuses exactly the names other than format and lang, naming the
 *     first such one in `parameter`, with a hint, and never reads past what it is given;
 *   - api_ko_particles (api/i18n/particles.h), over the header's bytes as a sentence,
 *     never lengthens it, leaves a text without "(" as it was, and keeps what stands
 *     before the first combined form.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/http/language.h"
#include "api/i18n/particles.h"
#include "api/request/query.h"

/* Whether s has a "ko" tag at all (a necessary condition for Korean). */
static int mentions_ko(const char *s)
{
    for (const char *p = s; p[0] != '\0' && p[1] != '\0'; p++)
        if ((p[0] == 'k' || p[0] == 'K') && (p[1] == 'o' || p[1] == 'O'))
            return 1;
    return 0;
}

static enum api_lang primary(const char *v, int *known)
{
    size_t n = strcspn(v, "-");
    *known = 1;
    if (n == 2 && strncasecmp(v, "ko", 2) == 0)
        return API_LANG_KO;
    if (n == 2 && strncasecmp(v, "en", 2) == 0)
        return API_LANG_EN;
    *known = 0;
    return API_LANG_EN;
}

static void check_language(const char *header, const char *lang_value)
{
    struct api_param p = { "lang", lang_value };
    struct api_request req = { .method = "GET", .path = "/healthz",
                               .params = lang_value ? &p : NULL, .n_params = lang_value ? 1 : 0,
                               .accept_language = header };
    enum api_lang a, b;
    struct api_error e1, e2;
    int ok1 = api_lang_negotiate(&req, &a, &e1), ok2 = api_lang_negotiate(&req, &b, &e2);
    if (ok1 != ok2 || (ok1 && a != b))
        abort();
    if (lang_value == NULL) {
        if (!ok1 || (a == API_LANG_KO && !mentions_ko(header)))
            abort();
        return;
    }
    int known;
    enum api_lang want = primary(lang_value, &known);
    if (known ? (!ok1 || a != want)
              : (ok1 || e1.type != API_INVALID_VALUE || strcmp(e1.parameter, "lang") != 0))
        abort();
}

static void check_query(char *names)
{
    struct api_param params[16];
    size_t n = 0;
    for (char *line = names; line != NULL && n < 16;) {
        char *next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        params[n++] = (struct api_param){ line, "" };
        line = next;
    }
    struct api_request req = { .method = "GET", .path = "/healthz", .params = params,
                               .n_params = n };
    size_t first_unknown = n;
    for (size_t i = 0; i < n && first_unknown == n; i++)
        if (strcmp(params[i].name, "format") != 0 && strcmp(params[i].name, "lang") != 0)
            first_unknown = i;
    struct api_error err;
    int ok = api_check_query(&req, NULL, &err);
    if (ok != (first_unknown == n))
        abort();
    if (!ok && (err.type != API_UNKNOWN_FIELD || err.hint[0] == '\0' ||
                strncmp(err.parameter, params[first_unknown].name, sizeof err.parameter - 1) != 0))
        abort();
}

static void check_particles(const char *sentence)
{
    size_t len = strlen(sentence);
    char *s = malloc(len + 1);
    if (s == NULL)
        return;
    memcpy(s, sentence, len + 1);
    api_ko_particles(s);
    size_t after = strlen(s);
    if (after > len || (strchr(sentence, '(') == NULL && strcmp(s, sentence) != 0))
        abort();
    /* Nothing before the first place a form could start is touched. */
    static const char *const starts[] = { "은(는)", "이(가)", "을(를)", "과(와)", "(으)로" };
    size_t first = len;
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
        const char *at = strstr(sentence, starts[i]);
        if (at != NULL && (size_t)(at - sentence) < first)
            first = (size_t)(at - sentence);
    }
    if (after < first || memcmp(s, sentence, first) != 0)
        abort();
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 2);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    text[size + 1] = '\0';
    size_t header_len = strlen(text);
    const char *lang_value = header_len < size ? text + header_len + 1 : NULL;
    check_language(text, lang_value);
    check_particles(text);
    if (lang_value != NULL) {
        size_t lang_len = strlen(lang_value);
        if (header_len + 1 + lang_len < size)
            check_query(text + header_len + 1 + lang_len + 1);
    }
    free(text);
    return 0;
}
