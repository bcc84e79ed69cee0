/* The selection-list check behind "installed, but only where asked"
 * (common/xbtl_optin.h): which values of --mca btl name a component. */
#include "tap.h"
#include "xbtl_optin.h"

int main(void)
{
    CHECK(xbtl_list_includes("self,rsm", "rsm"), "an inclusion list names its last entry");
    CHECK(xbtl_list_includes("rsm,self", "rsm"), "... and its first");
    CHECK(xbtl_list_includes("self,vader,rsm,tcp", "rsm"), "... and one in the middle");
    CHECK(xbtl_list_includes("rsm", "rsm"), "a one-name list");
    CHECK(xbtl_list_includes(" self , rsm ", "rsm"), "blanks around names are ignored");
    CHECK(!xbtl_list_includes("self,vader", "rsm"), "a list without it does not name it");
    CHECK(!xbtl_list_includes("self,rsm2", "rsm"), "a longer name is another component");
    CHECK(!xbtl_list_includes("self,rs", "rsm"), "a prefix is another component");
    CHECK(!xbtl_list_includes("self,xrsm", "rsm"), "a suffix match is another component");
    CHECK(!xbtl_list_includes("^uct,openib,ofi", "rsm"), "Debian's exclusion list names nothing");
    CHECK(!xbtl_list_includes("^rsm", "rsm"), "excluding it does not name it");
    CHECK(!xbtl_list_includes(" ^tcp", "rsm"), "an exclusion list after a blank");
    CHECK(!xbtl_list_includes("", "rsm"), "an empty list names nothing");
    CHECK(!xbtl_list_includes(NULL, "rsm"), "no list names nothing");
    CHECK(!xbtl_list_includes("self,,rsm,", "") && xbtl_list_includes("self,,rsm,", "rsm"),
          "empty entries are skipped, an empty name is never named");
    CHECK(xbtl_list_includes("self,pmeth", "pmeth") && !xbtl_list_includes("self,rsm", "pmeth"),
          "the same rule for every component");
    return tap_done();
}
