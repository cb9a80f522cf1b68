/*
 * tests/unit/suite_run.h — what every Check suite's main does: run the suite (forking
 * per test unless CK_FORK=no, as Check decides) and exit by whether anything failed.
 */
#ifndef TESTS_UNIT_SUITE_RUN_H
#define TESTS_UNIT_SUITE_RUN_H

#include <stdlib.h>

#include <check.h>

static inline int suite_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
