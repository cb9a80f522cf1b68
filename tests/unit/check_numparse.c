/*
 * tests/unit/check_numparse.c — the number reader (api/json/numparse.cc): one token on
 * each of its paths (bytewise, the CPU's vector path, AVX2) against the bytewise walk,
 * and rows of numbers (api_read_number_row) on every path against the one-number
 * reader.
 *
 * Suites: Numbers.
 *
 * Not here: numbers inside documents, compared with strtod (check_json_read.c).
 */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/numparse.h"
#include "tests/unit/api_fixture.h"

/*
 * api_read_json_number is api_read_json_number_bytewise, field for field and error for
 * error, for every kind of token (printed doubles, digit runs with and without a
 * point or an exponent, each malformed shape) followed by each kind of byte, with the
 * buffer ending 0 to 40 bytes after the token: the vector path reads 32 bytes at once
 * and must leave to the bytewise walk whatever it cannot see the end of. Each buffer
 * is allocated to its exact length, so ASan catches a read past it. The AVX2 path
 * (api_read_json_number_avx2) is compared the same way. (Where the CPU has neither,
 * both calls take the same path as the walk.)
 */
START_TEST(test_reader_vector_path_agrees)
{
    static const char *const shapes[] = {
        "0", "-0", "7", "-7", "0.5", "-0.25", "10", "123456789012345678", "1234567890123456789",
        "12345678901234567890", "0.1234567890123456789", "0.12345678901234567890",
        "-0.22034050321745702", "0.8015213612137668", "9999999999999999999", "1e5", "1E5",
        "-1.5e-7", "2.5E+300", "1.7976931348623157e308", "4.9406564584124654e-324",
        "-", "-a", "01", "-01", "00.5", "1.", "-1.", "1.e3", "1e", "1e+", "1E-", ".5", "--1",
        "0.", "0x1", "1.2.3", "1..2", "+1", "0.0000000000000000000000001",
        "123456789012345678901234567890.5",
    };
    static const char *const afters[] = { "", ",", "]", " ", "}", "x", ".", "e", "5", "-" };
    enum { RANDOM = 3000 };
    size_t n_shapes = sizeof shapes / sizeof shapes[0];
    uint64_t state = 31;
    size_t compared = 0;
    for (size_t i = 0; i < n_shapes + RANDOM; i++) {
        char token[96];
        if (i < n_shapes)
            snprintf(token, sizeof token, "%s", shapes[i]);
        else
            random_number_token(&state, token, sizeof token);
        for (size_t a = 0; a < sizeof afters / sizeof afters[0]; a++) {
            for (size_t pad = 0; pad <= 40; pad += (i < n_shapes ? 1 : 7)) {
                size_t tlen = strlen(token), alen = strlen(afters[a]);
                size_t len = tlen + (pad < alen ? pad : alen) + (pad > alen ? pad - alen : 0);
                char *buf = malloc(len > 0 ? len : 1);
                ck_assert_ptr_nonnull(buf);
                memcpy(buf, token, tlen);
                for (size_t k = tlen; k < len; k++) /* the byte after, then filler digits */
                    buf[k] = k - tlen < alen ? afters[a][k - tlen] : (char)('0' + k % 10);
                struct api_json_number bytes;
                memset(&bytes, 0xA5, sizeof bytes);
                enum api_number_syntax sb = api_read_json_number_bytewise(buf, buf + len, &bytes);
                for (int path = 0; path < 2; path++) { /* the CPU's path, then AVX2's */
                    struct api_json_number vec;
                    memset(&vec, 0xA5, sizeof vec);
                    enum api_number_syntax sv = path == 0
                                                    ? api_read_json_number(buf, buf + len, &vec)
                                                    : api_read_json_number_avx2(buf, buf + len, &vec);
                    ck_assert_msg(sv == sb, "path %d, \"%.*s\": %d, bytewise %d", path, (int)len,
                                  buf, sv, sb);
                    if (sv == API_NUMBER_OK) {
                        ck_assert_msg(vec.end == bytes.end && vec.is_integer == bytes.is_integer &&
                                          (!vec.is_integer || vec.integer == bytes.integer) &&
                                          memcmp(&vec.real, &bytes.real, sizeof vec.real) == 0,
                                      "path %d, \"%.*s\": end %td %a, bytewise end %td %a", path,
                                      (int)len, buf, vec.end - buf, vec.real, bytes.end - buf,
                                      bytes.real);
                    }
                    compared++;
                }
                free(buf);
            }
        }
    }
    ck_assert_uint_gt(compared, 60000);
}
END_TEST

/*
 * The value a row stores for a number: what scan_number_rows stored before the row
 * reader, from api_read_json_number_bytewise (an integer's conversion, else `real`);
 * false where the row must be refused (bad syntax, not finite).
 */
static bool row_value_by_number(const char *p, const char *end, double *x, const char **past)
{
    struct api_json_number num;
    if (api_read_json_number_bytewise(p, end, &num) != API_NUMBER_OK)
        return false;
    *x = num.is_integer ? (double)num.integer : num.real;
    *past = num.end;
    return num.is_integer || isfinite(*x);
}

/*
 * api_read_number_row, on every path this CPU has (bytewise, AVX2, AVX-512 VBMI2
 * narrowed to what runs), reads a row of random tokens with random white space as
 * the number reader reads each token: the same bits, the same count, `next` past the
 * ']'; with room for fewer numbers than the row holds, calls that go on from `next`
 * read the same. Each row is allocated to its exact length (ASan sees a read past it).
 */
START_TEST(test_number_row_reads_as_the_number_reader)
{
    static const char *const spaces[] = { "", "", "", " ", "\n  ", "\t", "\r\n" };
    enum { ROWS = 400, MOST = 40 };
    uint64_t state = 77;
    size_t compared = 0;
    for (int row = 0; row < ROWS; row++) {
        char text[MOST * 128 + 8];
        double want[MOST];
        size_t len = 0, n = 1 + next_random(&state) % MOST;
        for (size_t i = 0; i < n; i++) {
            char token[96];
            const char *past;
            do
                random_number_token(&state, token, sizeof token);
            while (!row_value_by_number(token, token + strlen(token), &want[i], &past));
            len += (size_t)sprintf(text + len, "%s%s%s%s", spaces[next_random(&state) % 7], token,
                                   spaces[next_random(&state) % 7], i + 1 < n ? "," : "]");
        }
        char *buf = malloc(len);
        ck_assert_ptr_nonnull(buf);
        memcpy(buf, text, len);
        for (int path = API_NUMBER_PATH_BYTEWISE; path <= API_NUMBER_PATH_AVX512VBMI2; path++) {
            size_t room = path == API_NUMBER_PATH_BYTEWISE ? n : 1 + next_random(&state) % n;
            double got[MOST];
            size_t count = 0;
            const char *p = buf;
            struct api_number_row r;
            do {
                size_t free_room = n - count < room ? n - count : room;
                r = api_read_number_row_by((enum api_number_path)path, p, buf + len, got + count,
                                           free_room);
                ck_assert_msg(r.next != NULL, "path %d refused \"%.*s\"", path, (int)len, buf);
                ck_assert_uint_le(r.count, free_room);
                count += r.count;
                p = r.next;
            } while (r.more && count < n);
            ck_assert_msg(!r.more && count == n && p == buf + len,
                          "path %d, room %zu: %zu of %zu numbers, more %d, next at %td of %zu",
                          path, room, count, n, r.more, p - buf, len);
            for (size_t i = 0; i < n; i++)
                ck_assert_msg(memcmp(&got[i], &want[i], sizeof got[i]) == 0,
                              "path %d, number %zu of \"%.*s\": %a, want %a", path, i, (int)len,
                              buf, got[i], want[i]);
            compared++;
        }
        free(buf);
    }
    ck_assert_uint_eq(compared, 3 * ROWS);
}
END_TEST

/* What a row of numbers must refuse, and the values it must give, on every path. */
START_TEST(test_number_row_refuses_and_converts)
{
    static const char *const refused[] = {
        "]", " ]", "1,]", "1 2]", "1,,2]", "1", "1,", "[1]]", "\"1\"]", "1e400]",
        "-1e400, 2]", "01]", "1.]", "-]", "1;2]", "1,null]", "true]", "1}", "0.5,",
        "0.12345678901234567890123456789,0.5", "0.1234567890123456,-0.7 x]",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        size_t len = strlen(refused[i]);
        char *buf = malloc(len > 0 ? len : 1);
        ck_assert_ptr_nonnull(buf);
        memcpy(buf, refused[i], len);
        for (int path = API_NUMBER_PATH_BYTEWISE; path <= API_NUMBER_PATH_AVX512VBMI2; path++) {
            double out[8];
            struct api_number_row r =
                api_read_number_row_by((enum api_number_path)path, buf, buf + len, out, 8);
            ck_assert_msg(r.next == NULL, "path %d read \"%s\"", path, refused[i]);
        }
        free(buf);
    }
    /* "-0" is the integer 0 (json_number_value's +0.0), "-0.0" a real -0.0; integers of
     * up to 18 digits are converted, longer ones read as reals, rounded. */
    static const char row[] = "-0, -0.0 ,5,\t123456789012345678 ,12345678901234567890, 1e2]";
    const double want[] = { 0.0, -0.0, 5.0, 123456789012345678.0, 12345678901234567890.0, 100.0 };
    for (int path = API_NUMBER_PATH_BYTEWISE; path <= API_NUMBER_PATH_AVX512VBMI2; path++) {
        double out[6];
        struct api_number_row r = api_read_number_row_by((enum api_number_path)path, row,
                                                         row + sizeof row - 1, out, 6);
        ck_assert_ptr_eq(r.next, row + sizeof row - 1);
        ck_assert_uint_eq(r.count, 6);
        ck_assert(!r.more);
        for (int i = 0; i < 6; i++)
            ck_assert_msg(memcmp(&out[i], &want[i], sizeof out[i]) == 0, "path %d, %d: %a, want %a",
                          path, i, out[i], want[i]);
    }
}
END_TEST

static Suite *numparse_suite(void)
{
    Suite *s = suite_create("numparse");

    TCase *numbers = tcase_create("Numbers");
    tcase_add_test(numbers, test_number_row_reads_as_the_number_reader);
    tcase_add_test(numbers, test_number_row_refuses_and_converts);
    tcase_add_test(numbers, test_reader_vector_path_agrees);
    suite_add_tcase(s, numbers);
    return s;
}

int main(void)
{
    return run_api_suite(numparse_suite());
}
