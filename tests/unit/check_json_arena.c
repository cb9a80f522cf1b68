/*
 * tests/unit/check_json_arena.c — where jansson's allocations go while a request is
 * handled (api/json/arena.c): blocks distinct and aligned, big blocks on their own,
 * scopes that nest, and request documents released inside and outside a scope.
 *
 * Suites: Arena. Leaks and double frees show under ASan and valgrind (make valgrind).
 */
#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "api/http/problem.h"
#include "api/json/arena.h"
#include "api/request/body.h"
#include "tests/unit/api_fixture.h"

START_TEST(test_arena_allocations_are_distinct_and_aligned)
{
    struct api_json_arena arena;
    api_json_arena_begin(&arena);
    enum { N = 20000 };
    static unsigned char *blocks[N];
    for (size_t i = 0; i < N; i++) {
        size_t size = 1 + i % 97;
        blocks[i] = api_json_malloc(size);
        ck_assert_ptr_nonnull(blocks[i]);
        ck_assert_uint_eq((uintptr_t)blocks[i] % _Alignof(max_align_t), 0);
        memset(blocks[i], (int)(i & 0xff), size);
    }
    /* A bump allocator: the second block follows the first, rounded to the alignment. */
    ck_assert_ptr_eq(blocks[1], blocks[0] + _Alignof(max_align_t));
    for (size_t i = 0; i < N; i++) /* no block was overwritten by a later one */
        for (size_t j = 0; j < 1 + i % 97; j++)
            ck_assert_uint_eq(blocks[i][j], i & 0xff);
    /* Big blocks have allocations of their own: one freed inside the scope is freed
     * then (ASan and valgrind would report a double free at the end otherwise), one
     * still held is freed with the arena (they would report the leak). */
    unsigned char *big = api_json_malloc(20u * 1024 * 1024);
    unsigned char *kept = api_json_malloc(API_JSON_BIG);
    ck_assert(big != NULL && kept != NULL);
    memset(big, 1, 20u * 1024 * 1024);
    memset(kept, 2, API_JSON_BIG);
    ck_assert(api_json_arena_has(big) && api_json_arena_has(kept));
    api_json_free(big);
    ck_assert(api_json_arena_has(kept));
    api_json_arena_end(&arena);
}
END_TEST

/* A value made before a scope and released inside it is freed (ASan and valgrind
 * would report the leak), and the scope ends where it began, even nested. */
START_TEST(test_arena_scopes_nest)
{
    json_t *older = json_string("made before the scope");
    struct api_json_arena outer, inner;
    api_json_arena_begin(&outer);
    json_t *kept = json_pack("{s:[f,f]}", "a", 1.5, 2.5);
    api_json_arena_begin(&inner);
    json_t *doc = json_loads("[1, 2.5, \"x\"]", 0, NULL);
    ck_assert_ptr_nonnull(doc);
    json_decref(older); /* freed with free(): it is no arena's */
    json_decref(kept);  /* the outer arena's: released with it */
    json_decref(doc);
    api_json_arena_end(&inner);
    json_t *after = json_real(3.0); /* back in the outer arena */
    ck_assert(json_real_value(after) == 3.0);
    api_json_arena_end(&outer);
    json_t *plain = json_array(); /* outside any scope: malloc'd, freed by free() */
    ck_assert_ptr_nonnull(plain);
    json_decref(plain);
    /* A request document outside api_handle's arena: api_release_body frees it all
     * (ASan and valgrind would report a leak); inside one, the arena does. */
    struct api_error err;
    static const char text[] = "{\"q\": [[1, 2.5]]}";
    json_t *body = api_parse_body(text, sizeof text - 1, &err);
    ck_assert_ptr_nonnull(body);
    ck_assert(!api_json_arena_has(body));
    api_release_body(body);
    api_json_arena_begin(&outer);
    body = api_parse_body(text, sizeof text - 1, &err);
    ck_assert(api_json_arena_has(body));
    api_release_body(body);
    api_json_arena_end(&outer);
}
END_TEST

static Suite *json_arena_suite(void)
{
    Suite *s = suite_create("json_arena");

    TCase *arena = tcase_create("Arena");
    tcase_add_test(arena, test_arena_allocations_are_distinct_and_aligned);
    tcase_add_test(arena, test_arena_scopes_nest);
    suite_add_tcase(s, arena);
    return s;
}

int main(void)
{
    return run_api_suite(json_arena_suite());
}
