/*
 * tests/unit/check_utf8.c — api/json/utf8.h against an independent reference, and
 * the four callers of it held to what they show on the wire.
 *
 * The reference knows UTF-8 only as RFC 3629 states it: a scalar value (U+0000..
 * U+10FFFF, not a surrogate) written in the fewest bytes, lead bits and six bits a
 * continuation byte. Bytes are a well-formed sequence of k bytes exactly when they
 * are what the reference encoder writes for the k-byte number they carry; nothing in
 * it shares the module's byte-range table. Against it: every code point, every
 * buffer of up to 3 bytes, every 4-byte buffer that opens with 0xF0..0xF7, every
 * overlong form of every code point, and the named classes a decoder must refuse.
 *
 * Suites: Core (the code points round trip), Limits (the sweeps, the edges, reading no
 * further than a NUL), Errors (what is refused, by class), Callers (the JSON reader's
 * message and position, the writer's \ufffd per ill-formed byte, the text renderer's
 * '?' and <U+XXXX>, the access log's escaping).
 */
#include <check.h>

#include "tests/unit/suite_run.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/json/read.h"
#include "api/json/utf8.h"
#include "api/json/write.h"
#include "api/render/text.h"
#include "server/ops/log.h"

/* ---- the reference: slow and plain ---- */

#define REF_MAX_SCALAR 0x10FFFFu

static bool ref_is_scalar(uint32_t cp)
{
    return cp <= REF_MAX_SCALAR && !(cp >= 0xD800 && cp <= 0xDFFF);
}

/* The fewest bytes that carry cp: 7 bits in one, 11 in two, 16 in three, 21 in four. */
static size_t ref_length(uint32_t cp)
{
    return cp < (1u << 7) ? 1 : cp < (1u << 11) ? 2 : cp < (1u << 16) ? 3 : 4;
}

/*
 * cp written in exactly k bytes (1..4), whether or not that is its shortest form or
 * cp a scalar value: the last byte first, six bits to each continuation byte
 * (10xxxxxx), the rest to the lead byte after k ones and a zero. Returns false when
 * cp does not fit in k bytes.
 */
static bool ref_encode_in(uint32_t cp, size_t k, unsigned char *out)
{
    if (k == 1) {
        out[0] = (unsigned char)cp;
        return cp < 0x80;
    }
    for (size_t i = k - 1; i > 0; i--) {
        out[i] = (unsigned char)(0x80 | (cp % 64));
        cp /= 64;
    }
    unsigned lead_room = 7 - (unsigned)k; /* bits left in the lead byte */
    if (cp >= (1u << lead_room))
        return false;
    unsigned char ones = (unsigned char)(0xFF << (8 - k));
    out[0] = (unsigned char)(ones | cp);
    return true;
}

/* The reference encoder: cp's shortest form; its length. */
static size_t ref_encode(uint32_t cp, unsigned char *out)
{
    size_t k = ref_length(cp);
    ref_encode_in(cp, k, out); /* always fits: k was chosen for cp */
    return k;
}

/*
 * The length of the well-formed sequence at the start of b (avail bytes), or 0: the
 * k for which b[0..k) is exactly the reference's encoding of a scalar value. The
 * number b[0..k) carries is read with no checks at all; the re-encoding checks them.
 */
static size_t ref_well_formed(const unsigned char *b, size_t avail)
{
    for (size_t k = 1; k <= 4 && k <= avail; k++) {
        uint32_t v = k == 1 ? b[0] : b[0] & (0xFFu >> (k + 1));
        for (size_t i = 1; i < k; i++)
            v = v * 64 + (b[i] & 0x3Fu);
        unsigned char again[4];
        if (ref_is_scalar(v) && ref_length(v) == k && ref_encode(v, again) == k &&
            memcmp(again, b, k) == 0)
            return k;
    }
    return 0;
}

/* Fewer cases under ATTND_TEST_QUICK (make valgrind sets it): memory errors show in a few. */
static bool quick(void)
{
    const char *q = getenv("ATTND_TEST_QUICK");
    return q != NULL && *q != '\0';
}

/*
 * An assertion for the loops over millions of cases: Check's ck_assert reports every
 * assertion that holds to its parent process, which over a sweep costs minutes.
 */
#define EXPECT(cond, ...)                                                               \
    do {                                                                                \
        if (!(cond))                                                                    \
            ck_abort_msg(__VA_ARGS__);                                                  \
    } while (0)

/* The module on b as a decoder must answer: the length, and the code point when well-formed. */
static void expect_module(const unsigned char *b, size_t avail, size_t want)
{
    size_t len = api_utf8_len(b, avail);
    uint32_t cp = 0xDEADBEEFu;
    size_t decoded = api_utf8_decode(b, avail, &cp);
    EXPECT(len == want && decoded == want && (want > 0 || cp == 0xDEADBEEFu),
           "%02x %02x %02x %02x (%zu readable): len %zu, decoded %zu, want %zu", b[0],
           avail > 1 ? b[1] : 0, avail > 2 ? b[2] : 0, avail > 3 ? b[3] : 0, avail, len, decoded,
           want);
}

/* ---- Core ---- */

/* Every scalar value: its reference bytes decode to it and encode from it, whole. */
START_TEST(test_every_code_point_round_trips)
{
    for (uint32_t cp = 0; cp <= REF_MAX_SCALAR; cp++) {
        if (!ref_is_scalar(cp))
            continue;
        unsigned char ref[4], mine[4] = { 0 };
        size_t k = ref_encode(cp, ref);
        uint32_t back = 0xDEADBEEFu;
        size_t len = api_utf8_len(ref, k), decoded = api_utf8_decode(ref, k, &back);
        EXPECT(len == k && decoded == k && back == cp, "U+%04X: len %zu, decoded %zu as U+%04X",
               cp, len, decoded, back);
        size_t encoded = api_utf8_encode(cp, mine);
        EXPECT(encoded == k && memcmp(mine, ref, k) == 0, "U+%04X encoded wrong", cp);
        /* Followed by more text, the sequence is still exactly its k bytes. */
        unsigned char more[8] = { 0 };
        memcpy(more, ref, k);
        memcpy(more + k, "\xC3\xA9xx", 4);
        EXPECT(api_utf8_len(more, sizeof more) == k, "U+%04X followed by text", cp);
    }
}
END_TEST

/* A sequence cut short is refused, whichever of its bytes are readable. */
START_TEST(test_every_code_point_cut_short_is_refused)
{
    for (uint32_t cp = 0x80; cp <= REF_MAX_SCALAR; cp++) {
        if (!ref_is_scalar(cp))
            continue;
        unsigned char ref[4];
        size_t k = ref_encode(cp, ref);
        for (size_t readable = 1; readable < k; readable++)
            expect_module(ref, readable, 0);
    }
}
END_TEST

/* Surrogates and numbers past U+10FFFF have no sequence: none is decoded, none written. */
START_TEST(test_no_sequence_for_non_scalars)
{
    static const uint32_t beyond[] = { 0x110000, 0x13FFFF, 0x140000, 0x1FFFFF, 0x200000,
                                       0x7FFFFFFF, 0xFFFFFFFF };
    unsigned char b[4], out[4] = { 0xAA, 0xAA, 0xAA, 0xAA };
    for (uint32_t cp = 0xD800; cp <= 0xDFFF; cp++) {
        ref_encode_in(cp, 3, b); /* what CESU-8 would write */
        expect_module(b, 3, 0);
        EXPECT(api_utf8_encode(cp, out) == 0, "U+%04X encoded", cp);
    }
    for (uint32_t cp = 0x110000; cp <= 0x1FFFFF; cp++) {
        ref_encode_in(cp, 4, b);
        expect_module(b, 4, 0);
    }
    for (size_t i = 0; i < sizeof beyond / sizeof beyond[0]; i++)
        ck_assert_uint_eq(api_utf8_encode(beyond[i], out), 0);
    ck_assert_msg(out[0] == 0xAA && out[3] == 0xAA, "a refused code point wrote bytes");
}
END_TEST

/* ---- Limits ---- */

/* The first and last code point of each length, and the neighbours of the surrogates. */
static const struct {
    const char *bytes;
    size_t len;
    uint32_t cp;
} edges[] = {
    { "\x00", 1, 0x0000 },         { "\x7F", 1, 0x007F },
    { "\xC2\x80", 2, 0x0080 },     { "\xDF\xBF", 2, 0x07FF },
    { "\xE0\xA0\x80", 3, 0x0800 }, { "\xED\x9F\xBF", 3, 0xD7FF },
    { "\xEE\x80\x80", 3, 0xE000 }, { "\xEF\xBF\xBD", 3, 0xFFFD },
    { "\xEF\xBF\xBF", 3, 0xFFFF }, { "\xF0\x90\x80\x80", 4, 0x10000 },
    { "\xF4\x8F\xBF\xBF", 4, 0x10FFFF },
};

START_TEST(test_edges)
{
    const unsigned char *b = (const unsigned char *)edges[_i].bytes;
    uint32_t cp = 0;
    ck_assert_uint_eq(api_utf8_decode(b, edges[_i].len, &cp), edges[_i].len);
    ck_assert_uint_eq(cp, edges[_i].cp);
    unsigned char out[4];
    ck_assert_uint_eq(api_utf8_encode(edges[_i].cp, out), edges[_i].len);
    ck_assert(memcmp(out, b, edges[_i].len) == 0);
}
END_TEST

/* Every buffer of 1, 2 and 3 bytes, each with exactly its bytes readable. */
START_TEST(test_every_short_buffer_matches_reference)
{
    unsigned char b[4] = { 0 };
    for (size_t avail = 1; avail <= 3; avail++) {
        uint32_t top = 1u << (8 * avail), step = quick() && avail == 3 ? 251 : 1;
        for (uint32_t x = 0; x < top; x += step) {
            for (size_t i = 0; i < avail; i++)
                b[i] = (unsigned char)(x >> (8 * i));
            expect_module(b, avail, ref_well_formed(b, avail));
        }
    }
}
END_TEST

/* Every 4-byte buffer that opens as a 4-byte form would (0xF0..0xF7), one lead a test. */
START_TEST(test_every_four_byte_buffer_matches_reference)
{
    unsigned char b[4] = { (unsigned char)(0xF0 + _i) };
    uint32_t step = quick() ? 4099 : 1;
    for (uint32_t x = 0; x < (1u << 24); x += step) {
        b[1] = (unsigned char)x, b[2] = (unsigned char)(x >> 8), b[3] = (unsigned char)(x >> 16);
        expect_module(b, 4, ref_well_formed(b, 4));
    }
}
END_TEST

/* Random 4-byte buffers with any lead: nothing else is a 4-byte sequence. */
START_TEST(test_random_four_byte_buffers_match_reference)
{
    uint64_t s = 0x9E3779B97F4A7C15ull;
    int n = quick() ? 10000 : 4000000;
    for (int i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17; /* xorshift64 */
        unsigned char b[4] = { (unsigned char)s, (unsigned char)(s >> 8), (unsigned char)(s >> 16),
                               (unsigned char)(s >> 24) };
        expect_module(b, 4, ref_well_formed(b, 4));
    }
}
END_TEST

/*
 * A NUL-terminated string may be given API_UTF8_MAX readable bytes: a sequence cut
 * by its NUL is refused without a read past the NUL (each prefix sits at the very end
 * of its allocation, so a read past it is an AddressSanitizer report).
 */
START_TEST(test_reads_stop_at_nul)
{
    for (size_t kept = 1; kept <= 3; kept++) {
        unsigned char *b = malloc(kept + 1);
        ck_assert_ptr_nonnull(b);
        for (uint32_t cp = 0x80; cp <= REF_MAX_SCALAR; cp += quick() ? 997 : 1) {
            unsigned char ref[4];
            if (!ref_is_scalar(cp) || ref_encode(cp, ref) <= kept)
                continue;
            memcpy(b, ref, kept);
            b[kept] = '\0';
            expect_module(b, API_UTF8_MAX, 0);
        }
        free(b);
    }
}
END_TEST

/* ---- Errors ---- */

static const struct {
    const char *what;
    const char *bytes;
    size_t len;
} refused[] = {
    { "overlong 2-byte '/'", "\xC0\xAF", 2 },
    { "overlong 2-byte NUL", "\xC0\x80", 2 },
    { "overlong 2-byte U+007F", "\xC1\xBF", 2 },
    { "overlong 3-byte NUL", "\xE0\x80\x80", 3 },
    { "overlong 3-byte U+07FF", "\xE0\x9F\xBF", 3 },
    { "overlong 4-byte NUL", "\xF0\x80\x80\x80", 4 },
    { "overlong 4-byte U+FFFF", "\xF0\x8F\xBF\xBF", 4 },
    { "surrogate U+D800", "\xED\xA0\x80", 3 },
    { "surrogate U+DBFF", "\xED\xAF\xBF", 3 },
    { "surrogate U+DC00", "\xED\xB0\x80", 3 },
    { "surrogate U+DFFF", "\xED\xBF\xBF", 3 },
    { "surrogate pair as CESU-8 (U+1F600)", "\xED\xA0\xBD\xED\xB8\x80", 6 },
    { "U+110000", "\xF4\x90\x80\x80", 4 },
    { "U+13FFFF", "\xF4\xBF\xBF\xBF", 4 },
    { "lead 0xF5 (U+140000)", "\xF5\x80\x80\x80", 4 },
    { "lead 0xF7 (U+1FFFFF)", "\xF7\xBF\xBF\xBF", 4 },
    { "5-byte form", "\xF8\x88\x80\x80\x80", 5 },
    { "6-byte form", "\xFC\x84\x80\x80\x80\x80", 6 },
    { "0xFE", "\xFE", 1 },
    { "0xFF", "\xFF", 1 },
    { "stray continuation 0x80", "\x80", 1 },
    { "stray continuation 0xBF", "\xBF", 1 },
    { "continuation after a whole character", "\xC3\xA9\x80", 3 }, /* refused at byte 2 */
    { "2-byte lead alone", "\xC3", 1 },
    { "2-byte lead before ASCII", "\xC3\x28", 2 },
    { "2-byte lead before a lead", "\xC3\xC3\xA9", 3 },
    { "3-byte cut after 1", "\xE2", 1 },
    { "3-byte cut after 2", "\xE2\x82", 2 },
    { "3-byte cut after 2, then ASCII", "\xE2\x82" "A", 3 },
    { "4-byte cut after 1", "\xF0", 1 },
    { "4-byte cut after 2", "\xF0\x9F", 2 },
    { "4-byte cut after 3", "\xF0\x9F\x98", 3 },
    { "4-byte cut after 3, then a lead", "\xF0\x9F\x98\xC3\xA9", 5 },
};

/* Where a case's refusal sits: the first byte, or the stray byte after a whole character. */
static size_t refused_at(int i)
{
    return strcmp(refused[i].what, "continuation after a whole character") == 0 ? 2 : 0;
}

START_TEST(test_refuses_class)
{
    const unsigned char *b = (const unsigned char *)refused[_i].bytes;
    size_t at = refused_at(_i);
    ck_assert_msg(ref_well_formed(b + at, refused[_i].len - at) == 0,
                  "the reference accepts %s", refused[_i].what);
    ck_assert_msg(api_utf8_len(b + at, refused[_i].len - at) == 0, "%s accepted",
                  refused[_i].what);
    uint32_t cp = 0xDEADBEEFu;
    ck_assert_uint_eq(api_utf8_decode(b + at, refused[_i].len - at, &cp), 0);
    ck_assert_uint_eq(cp, 0xDEADBEEFu);
}
END_TEST

/* 0xC0, 0xC1 and 0xF5..0xFF start nothing, whatever continuation bytes follow. */
START_TEST(test_never_a_lead)
{
    static const unsigned char never[] = { 0xC0, 0xC1, 0xF5, 0xF6, 0xF7, 0xF8, 0xF9,
                                           0xFA, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF };
    for (size_t i = 0; i < sizeof never; i++)
        for (uint32_t x = 0; x < 64 * 64 * 64; x++) {
            unsigned char b[4] = { never[i], (unsigned char)(0x80 | x % 64),
                                   (unsigned char)(0x80 | x / 64 % 64),
                                   (unsigned char)(0x80 | x / 4096) };
            for (size_t avail = 1; avail <= 4; avail++)
                expect_module(b, avail, 0);
        }
}
END_TEST

/* Every continuation byte alone, and each overlong form of every code point below U+10000. */
START_TEST(test_stray_and_overlong)
{
    for (unsigned c = 0x80; c <= 0xBF; c++) {
        unsigned char b[4] = { (unsigned char)c, 0x80, 0x80, 0x80 };
        expect_module(b, 4, 0);
    }
    for (uint32_t cp = 0; cp < 0x10000; cp++)
        for (size_t k = ref_length(cp) + 1; k <= 4; k++) {
            unsigned char b[4];
            ref_encode_in(cp, k, b); /* fits: k is longer than cp needs */
            expect_module(b, k, 0);
        }
}
END_TEST

/* ---- Callers: what each shows for what the module refuses ---- */

/* The JSON reader: a string of any well-formed character reads back as its bytes. */
START_TEST(test_reader_reads_every_code_point)
{
    char body[16];
    for (uint32_t cp = 0x80; cp <= REF_MAX_SCALAR; cp += quick() ? 211 : 17) {
        if (!ref_is_scalar(cp))
            continue;
        unsigned char ref[4];
        size_t k = ref_encode(cp, ref);
        memcpy(body, "[\"", 2);
        memcpy(body + 2, ref, k);
        memcpy(body + 2 + k, "\"]", 2);
        struct api_json_error err;
        json_t *v = api_json_read(body, k + 4, &err);
        EXPECT(v != NULL, "U+%04X: %s", cp, err.text);
        const json_t *s = json_array_get(v, 0);
        EXPECT(json_string_length(s) == k && memcmp(json_string_value(s), ref, k) == 0,
               "U+%04X read back wrong", cp);
        json_decref(v);
    }
}
END_TEST

/*
 * The JSON reader refuses each class with "invalid UTF-8 in string" at its first bad
 * byte (json/read.h's error: 0-based position, 1-based line and column), also when the
 * body ends inside the sequence.
 */
START_TEST(test_reader_refuses_class)
{
    char body[32];
    size_t at = refused_at(_i);
    for (int closed = 1; closed >= 0; closed--) {
        memcpy(body, "[\"", 2);
        memcpy(body + 2, refused[_i].bytes, refused[_i].len);
        size_t n = 2 + refused[_i].len;
        if (closed)
            memcpy(body + n, "\"]", 2), n += 2;
        struct api_json_error err;
        json_t *v = api_json_read(body, n, &err);
        ck_assert_msg(v == NULL, "%s was read", refused[_i].what);
        ck_assert_str_eq(err.text, "invalid UTF-8 in string");
        ck_assert_uint_eq(err.position, 2 + at);
        ck_assert_uint_eq(err.line, 1);
        ck_assert_uint_eq(err.column, 3 + at);
        ck_assert(!err.no_memory);
    }
}
END_TEST

/* A \u escape is written as the code point's UTF-8 (the encoder on the reader's path). */
START_TEST(test_reader_escapes_encode)
{
    static const struct {
        const char *body;
        const char *bytes;
    } cases[] = {
        { "[\"\\u00e9\"]", "\xC3\xA9" },
        { "[\"\\u07FF\\u0800\"]", "\xDF\xBF\xE0\xA0\x80" },
        { "[\"\\uFFFF\"]", "\xEF\xBF\xBF" },
        { "[\"\\ud83d\\ude00\"]", "\xF0\x9F\x98\x80" },
        { "[\"\\udbff\\udfff\"]", "\xF4\x8F\xBF\xBF" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct api_json_error err;
        json_t *v = api_json_read(cases[i].body, strlen(cases[i].body), &err);
        ck_assert_ptr_nonnull(v);
        ck_assert_str_eq(json_string_value(json_array_get(v, 0)), cases[i].bytes);
        json_decref(v);
    }
}
END_TEST

/*
 * What the JSON writer must write for bytes of which none is ASCII but 'A': each
 * well-formed sequence as it is, each other byte as \ufffd (write.h).
 */
static void writer_expect(char *want, const unsigned char *b, size_t n)
{
    size_t o = 0;
    want[o++] = '"';
    for (size_t i = 0; i < n;) {
        size_t k = ref_well_formed(b + i, n - i);
        if (k > 0) {
            memcpy(want + o, b + i, k), o += k, i += k;
        } else {
            memcpy(want + o, "\\ufffd", 6), o += 6, i++;
        }
    }
    want[o++] = '"';
    want[o] = '\0';
}

static void writer_check(const unsigned char *b, size_t n)
{
    char want[64];
    writer_expect(want, b, n);
    struct jw w;
    jw_init(&w, -1);
    jw_string_n(&w, (const char *)b, n);
    size_t len;
    char *got = jw_take(&w, &len);
    EXPECT(got != NULL && strcmp(got, want) == 0, "wrote %s, want %s", got ? got : "nothing", want);
    free(got);
}

START_TEST(test_writer_replaces_each_ill_formed_byte)
{
    writer_check((const unsigned char *)refused[_i].bytes, refused[_i].len);
}
END_TEST

/* Every pair of bytes from 0x80..0xFF and 'A', and every character with a byte cut off the end. */
START_TEST(test_writer_sweeps)
{
    for (unsigned x = 0x7F; x <= 0xFF; x++)
        for (unsigned y = 0x7F; y <= 0xFF; y++) {
            unsigned char b[2] = { (unsigned char)(x == 0x7F ? 'A' : x),
                                   (unsigned char)(y == 0x7F ? 'A' : y) };
            writer_check(b, 2);
        }
    for (uint32_t cp = 0x80; cp <= REF_MAX_SCALAR; cp += quick() ? 211 : 13) {
        unsigned char ref[4];
        if (!ref_is_scalar(cp))
            continue;
        size_t k = ref_encode(cp, ref);
        writer_check(ref, k);
        writer_check(ref, k - 1);
    }
}
END_TEST

/* The text renderer: '?' for a byte that starts nothing, one byte at a time. */
START_TEST(test_text_question_mark_per_byte)
{
    char s[16] = { 0 };
    size_t at = refused_at(_i);
    memcpy(s, refused[_i].bytes + at, refused[_i].len - at);
    if (memchr(s, '\0', refused[_i].len - at) != NULL)
        return; /* the renderers take C strings: a NUL ends the label */
    struct api_text_char c;
    ck_assert_uint_eq(api_text_char_next(s, &c), 1);
    ck_assert_str_eq(c.bytes, "?");
    ck_assert_uint_eq(c.len, 1);
    ck_assert_uint_eq(c.cols, 1);
}
END_TEST

START_TEST(test_text_characters_and_escapes)
{
    static const struct {
        const char *s;
        size_t consumed;
        const char *shown;
        size_t cols;
    } cases[] = {
        { "\xC3\xA9", 2, "\xC3\xA9", 1 },              /* é */
        { "\xEA\xB0\x80", 3, "\xEA\xB0\x80", 2 },      /* 가, wide */
        { "\xF0\x9F\x98\x80", 4, "\xF0\x9F\x98\x80", 2 }, /* 😀, wide */
        { "\xCC\x81", 2, "\xCC\x81", 0 },              /* combining acute */
        { "\xC2\x85", 2, "<U+0085>", 8 },              /* C1 NEL */
        { "\xE2\x80\xAE", 3, "<U+202E>", 8 },          /* right-to-left override */
        { "\xE2\x81\xA6", 3, "<U+2066>", 8 },          /* left-to-right isolate */
        { "\xEF\xBB\xBF", 3, "<U+FEFF>", 8 },          /* byte-order mark */
        { "\xF3\xA0\x80\x81", 4, "<U+E0001>", 9 },     /* language tag */
        { "\x1B", 1, "<U+001B>", 8 },                  /* escape */
        { "\xE2\x82", 1, "?", 1 },                     /* cut by the NUL */
        { "\xED\xA0\x80", 1, "?", 1 },                 /* surrogate */
        { "\xF4\x90\x80\x80", 1, "?", 1 },             /* past U+10FFFF */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct api_text_char c;
        ck_assert_uint_eq(api_text_char_next(cases[i].s, &c), cases[i].consumed);
        ck_assert_str_eq(c.bytes, cases[i].shown);
        ck_assert_uint_eq(c.len, strlen(cases[i].shown));
        ck_assert_uint_eq(c.cols, cases[i].cols);
    }
    /* Each byte of an ill-formed run is its own '?': E2 82 then F0 9F 98 then 'A'. */
    ck_assert_uint_eq(api_text_width("\xE2\x82\xF0\x9F\x98" "A"), 6);
}
END_TEST

/* The access log's JSON escaping: the same \ufffd per ill-formed byte as the writer. */
START_TEST(test_log_replaces_each_ill_formed_byte)
{
    char s[16] = { 0 }, want[64], got[128];
    memcpy(s, refused[_i].bytes, refused[_i].len);
    size_t n = strnlen(s, refused[_i].len); /* a C string: the log sees up to a NUL */
    writer_expect(want, (const unsigned char *)s, n);
    want[strlen(want) - 1] = '\0'; /* the log writes a string's body, no quotes */
    size_t len = srv_json_escape(got, sizeof got, s, sizeof s);
    ck_assert_str_eq(got, want + 1);
    ck_assert_uint_eq(len, strlen(want + 1));
}
END_TEST

/* A sequence cut by the log's length limit is ill-formed where it is cut. */
START_TEST(test_log_cut_sequence)
{
    char got[64];
    ck_assert_uint_eq(srv_json_escape(got, sizeof got, "a\xC3\xA9", 3), 3);
    ck_assert_str_eq(got, "a\xC3\xA9");
    ck_assert_uint_eq(srv_json_escape(got, sizeof got, "a\xC3\xA9", 2), 7);
    ck_assert_str_eq(got, "a\\ufffd");
    ck_assert_uint_eq(srv_json_escape(got, sizeof got, "\xF0\x9F\x98\x80", 3), 18);
    ck_assert_str_eq(got, "\\ufffd\\ufffd\\ufffd");
    ck_assert_uint_eq(srv_json_escape(got, sizeof got, "\xF4\x8F\xBF\xBF\"", 16), 6);
    ck_assert_str_eq(got, "\xF4\x8F\xBF\xBF\\\"");
}
END_TEST

/* Valid characters a log reader must not see raw: C1, bidi controls, line separators. */
START_TEST(test_log_escapes_invisible_controls)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"\xC2\x85", "\\u0085"},           /* NEXT LINE, C1 */
        {"\xC2\x80\xC2\x9F", "\\u0080\\u009f"},
        {"\xE2\x80\xAE", "\\u202e"},       /* RIGHT-TO-LEFT OVERRIDE */
        {"\xE2\x81\xA6\xE2\x81\xA9", "\\u2066\\u2069"}, /* isolates */
        {"\xE2\x80\x8F\xD8\x9C", "\\u200f\\u061c"},      /* marks */
        {"\xE2\x80\xA8", "\\u2028"},       /* LINE SEPARATOR */
        {"\xC2\xA0\xE2\x80\xAF\xE2\x81\xAA", "\xC2\xA0\xE2\x80\xAF\xE2\x81\xAA"}, /* kept */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char got[64];
        size_t len = srv_json_escape(got, sizeof got, cases[i].in, 64);
        ck_assert_str_eq(got, cases[i].want);
        ck_assert_uint_eq(len, strlen(cases[i].want));
    }
}
END_TEST

#define N_CASES(a) ((int)(sizeof(a) / sizeof(a)[0]))

/* A test case of the suite, with room for the sweeps (seconds under AddressSanitizer). */
static TCase *test_case(Suite *s, const char *name)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return tc;
}

static Suite *utf8_suite(void)
{
    Suite *s = suite_create("utf8");
    TCase *core = test_case(s, "Core");
    tcase_add_test(core, test_every_code_point_round_trips);
    tcase_add_test(core, test_every_code_point_cut_short_is_refused);
    tcase_add_test(core, test_no_sequence_for_non_scalars);

    TCase *limits = test_case(s, "Limits");
    tcase_add_loop_test(limits, test_edges, 0, N_CASES(edges));
    tcase_add_test(limits, test_every_short_buffer_matches_reference);
    tcase_add_loop_test(limits, test_every_four_byte_buffer_matches_reference, 0, 8);
    tcase_add_test(limits, test_random_four_byte_buffers_match_reference);
    tcase_add_test(limits, test_reads_stop_at_nul);

    TCase *errors = test_case(s, "Errors");
    tcase_add_loop_test(errors, test_refuses_class, 0, N_CASES(refused));
    tcase_add_test(errors, test_never_a_lead);
    tcase_add_test(errors, test_stray_and_overlong);

    TCase *callers = test_case(s, "Callers");
    tcase_add_test(callers, test_reader_reads_every_code_point);
    tcase_add_loop_test(callers, test_reader_refuses_class, 0, N_CASES(refused));
    tcase_add_test(callers, test_reader_escapes_encode);
    tcase_add_loop_test(callers, test_writer_replaces_each_ill_formed_byte, 0, N_CASES(refused));
    tcase_add_test(callers, test_writer_sweeps);
    tcase_add_loop_test(callers, test_text_question_mark_per_byte, 0, N_CASES(refused));
    tcase_add_test(callers, test_text_characters_and_escapes);
    tcase_add_loop_test(callers, test_log_replaces_each_ill_formed_byte, 0, N_CASES(refused));
    tcase_add_test(callers, test_log_cut_sequence);
    tcase_add_test(callers, test_log_escapes_invisible_controls);
    return s;
}

int main(void)
{
    return suite_run(utf8_suite());
}
