/* Version comparison, kept free of Open MPI so it can be unit-tested alone. */
#include <stdlib.h>
#include <string.h>

#include "xbtl_compat.h"

/* Parses "A.B.C" into three numbers; returns the position after C, or NULL. */
static const char *parse_release(const char *s, long v[3])
{
    char *end;
    for (int i = 0; i < 3; i++) {
        if (*s < '0' || *s > '9') {
            return NULL;
        }
        v[i] = strtol(s, &end, 10);
        s = end;
        if (i < 2) {
            if (*s != '.') {
                return NULL;
            }
            s++;
        }
    }
    return s;
}

bool xbtl_version_same_release(const char *built, const char *running)
{
    long a[3], b[3];
    const char *ra, *rb;

    if (NULL == built || NULL == running) {
        return false;
    }
    ra = parse_release(built, a);
    rb = parse_release(running, b);
    if (NULL == ra || NULL == rb) {
        return false;
    }
    return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && 0 == strcmp(ra, rb);
}
