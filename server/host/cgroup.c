/*
 * server/host/cgroup.c — the walk up a cgroup tree (see cgroup.h).
 */
#include "server/host/cgroup.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static double srv_tighter(double a, double b)
{
    return a <= 0 ? b : b <= 0 ? a : a < b ? a : b;
}

/*
 * The tightest limit from mount + path up to mount itself. Components are cut from the
 * end, so a path this namespace does not have still reaches the root.
 */
static double srv_chain(const char *mount, const char *path, bool v2, srv_cgroup_read_fn read)
{
    char dir[PATH_MAX];
    size_t root = strlen(mount);
    if ((size_t)snprintf(dir, sizeof dir, "%s%s", mount, path) >= sizeof dir)
        snprintf(dir, sizeof dir, "%s", mount); /* absurdly long: the root alone */
    double best = -1;
    for (;;) {
        best = srv_tighter(best, read(dir, v2));
        char *slash = strrchr(dir, '/');
        if (strlen(dir) <= root || slash == NULL || slash < dir + root)
            return best;
        *slash = '\0';
    }
}

/* Whether v1's comma-separated controller list names `controller`. */
static bool srv_lists_controller(const char *list, const char *controller)
{
    size_t want = strlen(controller);
    for (const char *p = list; *p != '\0';) {
        size_t n = strcspn(p, ",");
        if (n == want && strncmp(p, controller, n) == 0)
            return true;
        p += n + (p[n] == ',');
    }
    return false;
}

double srv_cgroup_tightest(const char *mount, const char *self_cgroup, const char *controller,
                           srv_cgroup_read_fn read)
{
    char v1_mount[PATH_MAX];
    snprintf(v1_mount, sizeof v1_mount, "%s/%s", mount, controller);
    double best = srv_tighter(srv_chain(mount, "", true, read),
                              srv_chain(v1_mount, "", false, read));
    FILE *f = fopen(self_cgroup, "r");
    char line[PATH_MAX + 128];
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char *controllers = strchr(line, ':'); /* "id:controllers:path" */
        char *path = controllers != NULL ? strchr(controllers + 1, ':') : NULL;
        if (path == NULL || path[1] != '/')
            continue;
        *path++ = '\0';
        *controllers++ = '\0'; /* line is now the id alone */
        if (strcmp(line, "0") == 0 && controllers[0] == '\0')
            best = srv_tighter(best, srv_chain(mount, path, true, read));
        else if (srv_lists_controller(controllers, controller))
            best = srv_tighter(best, srv_chain(v1_mount, path, false, read));
    }
    if (f != NULL)
        fclose(f);
    return best;
}
