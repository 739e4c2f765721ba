// connection::async_execute (batch.hpp): the batch's statements through a pipeline of their own on
// the connection (pipeline.hpp: each statement with its own Sync), the outcomes gathered in order; the
// handler runs once every statement is answered and the connection has left pipeline mode (so that it
// is usable again, or known broken).
#include "connection_impl.hpp"
#include "pipeline.hpp"
#include "statement_text.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <cassert>

namespace asio = boost::asio;

namespace respool::pg {

namespace {

using batch_handler = asio::any_completion_handler<void(error_code, std::vector<batch_outcome>)>;

struct batch_run {
    // (The handler is moved in here: Boost 1.81's any_completion_handler move-assignment recurses.)
    explicit batch_run(batch_handler h) : handler(std::move(h)) {}
    batch_handler handler;
    std::vector<batch_outcome> outcomes;
    std::vector<respool::diagnostics> words;
    respool::diagnostics begin_words;  // the transaction's BEGIN, when it goes first
    std::size_t answered = 0;
    bool idle = false;
    std::shared_ptr<detail::pipeline> pipe;

    void maybe_done() {
        if (answered < outcomes.size() || !idle) return;
        error_code first;
        for (std::size_t i = 0; i < outcomes.size(); ++i)
            if (outcomes[i].error) {
                outcomes[i].message = words[i].message;
                if (!first) first = outcomes[i].error;
            }
        pipe->on_idle = nullptr;  // (it held this run)
        auto h = std::move(handler);
        asio::dispatch(asio::append(std::move(h), first, std::move(outcomes)));
    }
};

// Every statement of the batch into the run's pipeline, each with its own Sync.
void submit_all(const std::shared_ptr<batch_run>& run, std::vector<batch::statement> statements) {
    for (std::size_t i = 0; i < statements.size(); ++i)
        run->pipe->submit(
            std::move(statements[i].sql), std::move(statements[i].p),
            [run, i](error_code ec, result r) {
                run->outcomes[i].error = ec;
                run->outcomes[i].rows = std::move(r);
                ++run->answered;
                run->maybe_done();
            },
            &run->words[i]);
}

}  // namespace

void connection::start_execute(batch b, batch_handler handler) {
    auto& c = *impl_;
    std::vector<batch::statement> statements = b.take();
    auto fail_all = [&](error_code ec, const std::string& why) {
        std::vector<batch_outcome> out(statements.size());
        for (auto& o : out) {
            o.error = ec;
            o.message = why;
        }
        asio::post(c.ex, asio::append(std::move(handler), ec, std::move(out)));  // never inline
    };
    if (c.busy) return fail_all(error::busy, "the connection runs another operation");
    if (!c.conn || PQstatus(c.conn) != CONNECTION_OK) return fail_all(error::not_connected, "not connected");
    for (const batch::statement& s : statements) {
        const detail::statement_facts facts = detail::scan_statement(s.sql);
        if (facts.copy_stream)
            return fail_all(error::unsupported_statement,
                            "a batch does not run COPY ... FROM STDIN or TO STDOUT (nothing was sent)");
        if (facts.session_effects) c.session.dirty = true;  // the reset on return clears it
    }
    if (statements.empty()) return fail_all({}, {});
    auto run = std::make_shared<batch_run>(std::move(handler));
    run->outcomes.resize(statements.size());
    run->words.resize(statements.size());
    run->pipe = std::make_shared<detail::pipeline>(impl_, c.statement_timeout);
    run->pipe->on_idle = [run](bool) {
        run->idle = true;
        run->maybe_done();
    };
    std::string begin = std::exchange(c.deferred_begin, {});
    if (begin.empty()) return submit_all(run, std::move(statements));
    // The batch is a transaction's first statement: the transaction's BEGIN, which waited to travel
    // with it, goes first, in a round trip of its own. The statements follow once the server has
    // opened the transaction: without it each would commit on its own, so a failed BEGIN fails them
    // all, unsent.
    run->pipe->submit(
        std::move(begin), params{},
        [run, rest = std::move(statements)](error_code ec, result) mutable {
            if (ec) {
                const std::string why =
                    "not sent: the transaction's BEGIN failed: " +
                    (run->begin_words.message.empty() ? ec.message() : run->begin_words.message);
                for (std::size_t i = 0; i < run->outcomes.size(); ++i) {
                    run->outcomes[i].error = ec;
                    run->words[i].message = why;
                }
                run->answered = run->outcomes.size();
                return run->maybe_done();
            }
            // Called inline as the BEGIN's reply is read, before the pipeline can go idle: the
            // statements queue behind it on the same pipeline, and on_idle comes after their replies.
            assert(!run->pipe->idle());
            submit_all(run, std::move(rest));
        },
        &run->begin_words, detail::pipeline::preparation::unnamed);
}

}  // namespace respool::pg
