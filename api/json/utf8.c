/*
 * api/json/utf8.c — decoding to code points and encoding from them (see utf8.h).
 *
 * Whether bytes are well-formed is decided in one place only, api_utf8_len: the
 * decoder asks it first and then only gathers the bits of a sequence known good.
 * Neither function is on a per-byte path (the text renderer decodes labels, the JSON
 * reader encodes \u escapes), so they are calls, not inline.
 */
#include "api/json/utf8.h"

size_t api_utf8_decode(const unsigned char *s, size_t avail, uint32_t *cp)
{
    size_t len = api_utf8_len(s, avail);
    if (len == 0)
        return 0;
    /* The lead byte keeps 7, 5, 4 or 3 bits of the code point; each other byte 6. */
    static const unsigned char lead_bits[API_UTF8_MAX + 1] = { 0, 0x7F, 0x1F, 0x0F, 0x07 };
    uint32_t v = s[0] & lead_bits[len];
    for (size_t i = 1; i < len; i++)
        v = (v << 6) | (s[i] & 0x3Fu);
    *cp = v;
    return len;
}

size_t api_utf8_encode(uint32_t cp, unsigned char *out)
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        return 0; /* no sequence: writing one would make ill-formed UTF-8 */
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}
