// respool::prometheus as a user gets it from the installed package: the collector's families serialized
// by prometheus-cpp. Exits 0 when the pool's samples and build_info are there.
#include <respool/http/prometheus_collector.hpp>
#include <respool/pool.hpp>

#include <prometheus/text_serializer.h>
#include <boost/asio/io_context.hpp>

#include <cstdio>
#include <memory>
#include <sstream>

int main() {
    boost::asio::io_context io;
    respool::pool_options o;
    o.min = 1;
    o.max = 2;
    respool::hooks<int> h;
    h.factory = [] { return 1; };
    respool::pool<int> p(io.get_executor(), o, std::move(h));
    io.poll();
    auto collector = std::make_shared<respool::http::prometheus_collector>();
    collector->add("app", [&p] { return p.stats(); });
    std::ostringstream text;
    prometheus::TextSerializer().Serialize(text, collector->Collect());
    const std::string out = text.str();
    const bool ok = out.find("respool_pool_resources_min{pool=\"app\"} 1\n") != std::string::npos &&
                    out.find("respool_build_info{version=\"") != std::string::npos;
    std::printf("prometheus_app: %s\n", ok ? "metrics" : "no metrics");
    return ok ? 0 : 1;
}
