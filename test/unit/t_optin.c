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
    /* may a framework select it at all (pmeth's one-sided default asks about osc pt2pt) */
    CHECK(xbtl_list_allows(NULL, "pt2pt") && xbtl_list_allows("", "pt2pt")
              && xbtl_list_allows("  ", "pt2pt"), "no list allows every component");
    CHECK(!xbtl_list_allows("^ucx,pt2pt", "pt2pt"), "Debian's osc list excludes pt2pt");
    CHECK(xbtl_list_allows("^ucx,pt2pt", "rdma"), "... and allows rdma");
    CHECK(xbtl_list_allows("^ucx", "pt2pt") && xbtl_list_allows(" ^ ucx", "pt2pt"),
          "an exclusion list without it allows it");
    CHECK(xbtl_list_allows("pt2pt", "pt2pt") && !xbtl_list_allows("rdma", "pt2pt"),
          "an inclusion list allows what it names, nothing else");
    CHECK(xbtl_list_allows("^pt2pt2", "pt2pt") && !xbtl_list_allows("pt2pt2", "pt2pt"),
          "a longer name is another component, in either kind of list");
    CHECK(!xbtl_list_allows("pt2pt", "") && !xbtl_list_allows("pt2pt", NULL),
          "no component is allowed without a name");
    return tap_done();
}
