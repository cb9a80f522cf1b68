/*
 * api/i18n/particles.c — Korean particles picked after the value is in (see particles.h).
 */
#include "api/i18n/particles.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

/* How the word before a particle ends when read aloud. */
enum ending { ENDS_UNKNOWN, ENDS_VOWEL, ENDS_CONSONANT, ENDS_RIEUL };

struct form {
    const char *combined;
    const char *after_consonant;
    const char *after_vowel;
    bool rieul_as_vowel; /* (으)로: a word ending in ㄹ takes 로, as a vowel does */
};

static const struct form forms[] = {
    { "은(는)", "은", "는", false },
    { "이(가)", "이", "가", false },
    { "을(를)", "을", "를", false },
    { "과(와)", "과", "와", false },
    { "(으)로", "으로", "로", true },
};

/* A Hangul syllable's final consonant: 0 none, 8 ㄹ (Unicode's composition order). */
static enum ending syllable_ending(uint32_t cp)
{
    unsigned final = (unsigned)((cp - 0xAC00u) % 28u);
    return final == 0 ? ENDS_VOWEL : final == 8 ? ENDS_RIEUL : ENDS_CONSONANT;
}

/*
 * A number ends as its last digit is read: 0 영 (and 10 십, 100 백, 1000 천, 10000 만:
 * all closed), 1 일, 7 칠, 8 팔 in ㄹ, 3 삼 and 6 육 closed, 2 이, 4 사, 5 오, 9 구 open.
 */
static enum ending digit_ending(char d)
{
    static const enum ending by_digit[10] = {
        ENDS_CONSONANT, ENDS_RIEUL, ENDS_VOWEL, ENDS_CONSONANT, ENDS_VOWEL,
        ENDS_VOWEL, ENDS_CONSONANT, ENDS_RIEUL, ENDS_RIEUL, ENDS_VOWEL,
    };
    return by_digit[d - '0'];
}

/* A lone Latin letter is read by its name: l 엘, r 알 in ㄹ; m 엠, n 엔 closed; the rest open. */
static enum ending letter_ending(char c)
{
    switch (c | 0x20) {
    case 'l': case 'r': return ENDS_RIEUL;
    case 'm': case 'n': return ENDS_CONSONANT;
    default: return ENDS_VOWEL;
    }
}

static bool is_latin(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/*
 * attnd's own words, as Korean reads them (the last word of a name: d_model is read
 * "model"): the field, parameter and step names its messages put before a particle.
 */
static const struct {
    const char *word;
    enum ending ending;
} known_words[] = {
    { "alibi", ENDS_VOWEL },       /* 알리바이 */
    { "base", ENDS_VOWEL },        /* 베이스 */
    { "bias", ENDS_VOWEL },        /* 바이어스 */
    { "data", ENDS_VOWEL },        /* 데이터 */
    { "datatype", ENDS_CONSONANT }, /* 데이터타입 */
    { "dropout", ENDS_CONSONANT }, /* 드롭아웃 */
    { "explain", ENDS_CONSONANT }, /* 익스플레인 */
    { "format", ENDS_CONSONANT },  /* 포맷 */
    { "fraction", ENDS_CONSONANT }, /* 프랙션 */
    { "head", ENDS_VOWEL },        /* 헤드 */
    { "heads", ENDS_VOWEL },       /* 헤즈 */
    { "heatmap", ENDS_CONSONANT }, /* 히트맵 */
    { "include", ENDS_VOWEL },     /* 인클루드 */
    { "inputs", ENDS_VOWEL },      /* 인풋츠 */
    { "json", ENDS_CONSONANT },    /* 제이슨 */
    { "labels", ENDS_VOWEL },      /* 레이블스 */
    { "lang", ENDS_CONSONANT },    /* 랭 */
    { "layout", ENDS_CONSONANT },  /* 레이아웃 */
    { "left", ENDS_VOWEL },        /* 레프트 */
    { "logit", ENDS_CONSONANT },   /* 로짓 */
    { "mask", ENDS_VOWEL },        /* 마스크 */
    { "model", ENDS_RIEUL },       /* 모델 */
    { "name", ENDS_CONSONANT },    /* 네임 */
    { "outputs", ENDS_VOWEL },     /* 아웃풋츠 */
    { "parameters", ENDS_VOWEL },  /* 파라미터스 */
    { "pitfall", ENDS_RIEUL },     /* 핏폴 */
    { "random", ENDS_CONSONANT },  /* 랜덤 */
    { "right", ENDS_VOWEL },       /* 라이트 */
    { "rope", ENDS_VOWEL },        /* 로프 */
    { "round", ENDS_VOWEL },       /* 라운드 */
    { "row", ENDS_VOWEL },         /* 로우 */
    { "scale", ENDS_RIEUL },       /* 스케일 */
    { "scores", ENDS_VOWEL },      /* 스코어스 */
    { "seed", ENDS_VOWEL },        /* 시드 */
    { "semantics", ENDS_VOWEL },   /* 시맨틱스 */
    { "shape", ENDS_VOWEL },       /* 셰이프 */
    { "sink", ENDS_VOWEL },        /* 싱크 */
    { "softcap", ENDS_CONSONANT }, /* 소프트캡 */
    { "title", ENDS_RIEUL },       /* 타이틀 */
    { "tokens", ENDS_VOWEL },      /* 토큰스 */
    { "vmax", ENDS_VOWEL },        /* 브이맥스 */
    { "vmin", ENDS_CONSONANT },    /* 브이민 */
    { "weights", ENDS_VOWEL },     /* 웨이츠 */
    { "window", ENDS_VOWEL },      /* 윈도우 */
};

/* A Latin word ending at s[end): a letter's name when it stands alone, else a known word. */
static enum ending latin_ending(const char *s, size_t end)
{
    size_t start = end;
    while (start > 0 && is_latin(s[start - 1]))
        start--;
    size_t len = end - start;
    if (len == 1)
        return letter_ending(s[start]);
    for (size_t i = 0; i < sizeof known_words / sizeof known_words[0]; i++)
        if (strlen(known_words[i].word) == len &&
            strncasecmp(known_words[i].word, s + start, len) == 0)
            return known_words[i].ending;
    return ENDS_UNKNOWN;
}

/* How the text s[0..end) ends, read aloud, past spaces and closing quotes or brackets. */
static enum ending ending_before(const char *s, size_t end)
{
    while (end > 0 && strchr(" \"')]", s[end - 1]) != NULL)
        end--;
    if (end == 0)
        return ENDS_UNKNOWN;
    unsigned char last = (unsigned char)s[end - 1];
    if (last >= '0' && last <= '9')
        return digit_ending((char)last);
    if (is_latin((char)last))
        return latin_ending(s, end);
    /* A Hangul syllable: three bytes, 1110xxxx 10xxxxxx 10xxxxxx, U+AC00..U+D7A3. */
    if (end >= 3 && ((unsigned char)s[end - 3] & 0xF0) == 0xE0) {
        uint32_t cp = ((uint32_t)(s[end - 3] & 0x0F) << 12) |
                      ((uint32_t)(s[end - 2] & 0x3F) << 6) | (uint32_t)(s[end - 1] & 0x3F);
        if (cp >= 0xAC00 && cp <= 0xD7A3)
            return syllable_ending(cp);
    }
    return ENDS_UNKNOWN;
}

static const char *chosen(const struct form *f, enum ending e)
{
    if (e == ENDS_UNKNOWN)
        return f->combined;
    if (e == ENDS_VOWEL || (e == ENDS_RIEUL && f->rieul_as_vowel))
        return f->after_vowel;
    return f->after_consonant;
}

void api_ko_particles(char *s)
{
    /* Every combined form holds "(" followed by a Hangul syllable, or starts with "(". */
    if (strchr(s, '(') == NULL)
        return;
    size_t in = 0, out = 0;
    while (s[in] != '\0') {
        const struct form *f = NULL;
        for (size_t i = 0; i < sizeof forms / sizeof forms[0] && f == NULL; i++)
            if (strncmp(s + in, forms[i].combined, strlen(forms[i].combined)) == 0)
                f = &forms[i];
        if (f == NULL) {
            s[out++] = s[in++];
            continue;
        }
        /* What came before is already written: read its ending there. */
        const char *form = chosen(f, ending_before(s, out));
        size_t len = strlen(form);
        memmove(s + out, form, len);
        out += len;
        in += strlen(f->combined);
    }
    s[out] = '\0';
}
