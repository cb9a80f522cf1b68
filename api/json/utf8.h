/*
 * api/json/utf8.h — UTF-8 as RFC 3629 defines it, attnd's one decoder: the length of
 * the well-formed sequence at a byte, its code point, and the bytes of a code point.
 *
 * Well-formed means the shortest encoding of a code point in U+0000..U+10FFFF that is
 * not a surrogate (U+D800..U+DFFF), as the table of byte ranges in RFC 3629, section 4,
 * has it: 0xC0, 0xC1 and 0xF5..0xFF start nothing, a continuation byte (0x80..0xBF)
 * never starts a sequence, and a sequence cut short is none.
 *
 * Not here: what a caller does with bytes that are not UTF-8 (the JSON reader refuses
 * them, the JSON writer and the access log write U+FFFD for each, the text renderer
 * '?'), escaping, and display widths (api/render/text.c).
 *
 * It sits in the lowest room so that every room of api/ and server/ may use it. The
 * length check and the decoder are inline: the JSON reader and writer run the check on
 * every non-ASCII character of bodies and answers of megabytes, the text renderer the
 * decoder on every character of a label, and a call would cost more than either.
 */
#ifndef ATTND_API_JSON_UTF8_H
#define ATTND_API_JSON_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The longest well-formed sequence, in bytes. */
#define API_UTF8_MAX 4

/*
 * The length (1..4) of the well-formed sequence at s, of which avail bytes (at least
 * 1: the callers test for the end before they look) may be read; 0 when none starts
 * there. An ASCII byte, NUL included, is a sequence of 1.
 *
 * The bytes are read in order, and none after the first that cannot go on with the
 * sequence. A NUL never can, so a NUL-terminated string may be given API_UTF8_MAX as
 * avail: nothing past its NUL is read.
 */
static inline size_t api_utf8_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    /* ASCII is sorted with the lead bytes, not tested first: the JSON reader and writer
     * call this only from 0x80 up, and a test ahead of the others costs them on each. */
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : c < 0x80 ? 1 : 0;
    if (len <= 1)
        return len;
    if (c > 0xF4 || len > avail)
        return 0;
    /* The second byte's range is what shuts out overlong forms (after 0xE0 and 0xF0),
     * surrogates (after 0xED) and code points past U+10FFFF (after 0xF4). */
    unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

/*
 * The well-formed sequence at s as api_utf8_len finds it (same avail, same reads):
 * returns its length and stores its code point in *cp; returns 0, *cp untouched,
 * when none starts there. Only api_utf8_len judges the bytes; this gathers the bits
 * of a sequence known good.
 */
static inline size_t api_utf8_decode(const unsigned char *s, size_t avail, uint32_t *cp)
{
    size_t len = api_utf8_len(s, avail);
    if (len == 0)
        return 0;
    /* The lead byte keeps 7, 5, 4 or 3 bits of the code point; each other byte 6. */
    uint32_t v = s[0] & (len == 1 ? 0x7Fu : 0x7Fu >> len);
    for (size_t i = 1; i < len; i++)
        v = (v << 6) | (s[i] & 0x3Fu);
    *cp = v;
    return len;
}

/*
 * Writes the sequence of code point cp at out (room for API_UTF8_MAX bytes, no NUL
 * added) and returns its length; returns 0, nothing written, for a surrogate or a
 * number past U+10FFFF, which have none.
 */
size_t api_utf8_encode(uint32_t cp, unsigned char *out);

#endif
