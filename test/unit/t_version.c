/* The run-time check that refuses a component built for another Open MPI. */
#include "tap.h"
#include "xbtl_compat.h"

int main(void)
{
    CHECK(xbtl_version_same_release("4.1.4", "4.1.4"), "same release matches");
    CHECK(!xbtl_version_same_release("4.1.4", "4.1.5"), "another release is refused");
    CHECK(!xbtl_version_same_release("4.1.4", "4.0.4"), "another minor is refused");
    CHECK(!xbtl_version_same_release("4.1.4", "5.1.4"), "another major is refused");
    CHECK(!xbtl_version_same_release("4.1.4", "4.1.4rc1"), "a release candidate is not the release");
    CHECK(!xbtl_version_same_release("4.1.4", "4.1.40"), "4.1.40 is not 4.1.4");
    CHECK(!xbtl_version_same_release("4.1.4", "4.1"), "a truncated version is refused");
    CHECK(!xbtl_version_same_release("4.1.4", ""), "an empty version is refused");
    CHECK(!xbtl_version_same_release("4.1.4", NULL), "a missing version is refused");
    CHECK(!xbtl_version_same_release("4.1.4", "v4.1.4"), "a prefixed version is refused");
    return tap_done();
}
