/* The selection-list parser of xbtl_optin.h, kept free of Open MPI so that it
 * can be unit-tested alone (test/unit/t_optin.c). */
#include <string.h>

#include "xbtl_optin.h"

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* does LIST name COMPONENT, as a plain list (a leading '^' skipped) */
static bool names(const char *list, const char *component)
{
    const size_t want = strlen(component);
    const char *p = list;
    while (*p != '\0') {
        const char *end = strchr(p, ',');
        if (end == NULL) {
            end = p + strlen(p);
        }
        const char *a = p, *b = end;
        while (a < b && is_blank(*a)) {
            a++;
        }
        while (b > a && is_blank(b[-1])) {
            b--;
        }
        if ((size_t) (b - a) == want && strncmp(a, component, want) == 0) {
            return true;
        }
        p = *end == ',' ? end + 1 : end;
    }
    return false;
}

bool xbtl_list_allows(const char *list, const char *component)
{
    if (component == NULL || *component == '\0') {
        return false;
    }
    if (list == NULL) {
        return true;
    }
    while (is_blank(*list)) {
        list++;
    }
    if (*list == '\0') {
        return true;            /* no list: every component may be selected */
    }
    if (*list == '^') {
        return !names(list + 1, component);
    }
    return names(list, component);
}

bool xbtl_list_includes(const char *list, const char *component)
{
    if (list == NULL || component == NULL || *component == '\0') {
        return false;
    }
    while (is_blank(*list)) {
        list++;
    }
    if (*list == '^') {
        return false;           /* an exclusion list includes nothing by name */
    }
    return names(list, component);
}
