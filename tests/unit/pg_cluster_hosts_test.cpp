// A cluster's conninfo split per host (src/pg/cluster_hosts.hpp) and the probe's LSN text
// (src/pg/probe.hpp), without a server.
#include "cluster_hosts.hpp"
#include "probe.hpp"

#include <respool/pg/roles.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

using namespace respool::pg::detail;

TEST(pg_cluster_hosts, a_keyword_conninfo_gives_each_host_its_own_with_every_other_option) {
    const auto hosts = split_hosts(
        "host=db1,db2 port=5432,5433 dbname=app user=app password=s3cret target_session_attrs=read-write");
    ASSERT_EQ(hosts.size(), 2u);
    EXPECT_EQ(hosts[0].name, "db1:5432");
    EXPECT_EQ(hosts[1].name, "db2:5433");
    for (const auto& h : hosts) {
        EXPECT_NE(h.conninfo.find("dbname='app'"), std::string::npos) << h.conninfo;
        EXPECT_NE(h.conninfo.find("password='s3cret'"), std::string::npos);
        EXPECT_EQ(h.conninfo.find("target_session_attrs"), std::string::npos);  // the cluster's business
        EXPECT_EQ(h.name.find("s3cret"), std::string::npos);
    }
    EXPECT_NE(hosts[0].conninfo.find("host='db1'"), std::string::npos);
    EXPECT_NE(hosts[1].conninfo.find("port='5433'"), std::string::npos);
}

TEST(pg_cluster_hosts, a_uri_with_several_hosts_and_one_port_for_all) {
    const auto hosts = split_hosts("postgresql://u:pw@10.0.0.1,10.0.0.2/app?port=6000&sslmode=disable");
    ASSERT_EQ(hosts.size(), 2u);
    EXPECT_EQ(hosts[0].name, "10.0.0.1:6000");
    EXPECT_EQ(hosts[1].name, "10.0.0.2:6000");
    EXPECT_NE(hosts[1].conninfo.find("sslmode='disable'"), std::string::npos);
}

TEST(pg_cluster_hosts, quotes_and_backslashes_in_values_survive_the_split) {
    const auto hosts = split_hosts("host=a,b password='it\\'s a \\\\ secret' application_name='x y'");
    ASSERT_EQ(hosts.size(), 2u);
    EXPECT_NE(hosts[0].conninfo.find("password='it\\'s a \\\\ secret'"), std::string::npos)
        << hosts[0].conninfo;
    EXPECT_NE(hosts[0].conninfo.find("application_name='x y'"), std::string::npos);
}

TEST(pg_cluster_hosts, one_host_or_none_is_a_cluster_of_one) {
    EXPECT_EQ(split_hosts("host=db1 dbname=app").size(), 1u);
    const auto none = split_hosts("dbname=app");
    ASSERT_EQ(none.size(), 1u);
    EXPECT_EQ(none[0].name, "localhost:5432");
}

TEST(pg_cluster_hosts, mismatched_lists_and_unparsable_text_are_refused_masked) {
    try {
        split_hosts("host=a,b,c port=1,2 password=s3cret");
        FAIL() << "3 hosts, 2 ports";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("2 ports for 3 hosts"), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos) << e.what();
    }
    EXPECT_THROW(split_hosts("host=a nonsense_keyword=1 password=s3cret"), std::invalid_argument);
}

TEST(pg_probe, lsn_text_round_trips_and_garbage_is_refused) {
    EXPECT_EQ(parse_lsn("0/0"), 0u);
    EXPECT_EQ(parse_lsn("16/B374D848"), (std::uint64_t{0x16} << 32) | 0xB374D848u);
    EXPECT_EQ(parse_lsn("FFFFFFFF/FFFFFFFF"), ~std::uint64_t{0});
    for (const char* bad : {"", "/", "1/", "/1", "1-2", "G/0", "123456789/0", "1/2/3"})
        EXPECT_FALSE(parse_lsn(bad).has_value()) << bad;
    const respool::pg::commit_token t{(std::uint64_t{0x16} << 32) | 0xB374D848u};
    EXPECT_EQ(to_string(t), "16/B374D848");
    EXPECT_EQ(respool::pg::commit_token_from_string("16/B374D848"), t);
}
