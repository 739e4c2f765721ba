// connection::async_execute (batch.hpp): the batch's statements through a pipeline of their own on
// the connection (pipeline.hpp: each statement with its own Sync), the outcomes gathered in order; the
// handler runs once every statement is answered and the connection has left pipeline mode (so that it
// is usable again, or known broken). A caller's cancellation reaches every statement not yet answered
// through a cancellation signal of its own (the pipeline completes it early and asks the server to
// stop the one it runs).
#include "connection_impl.hpp"
#include "pipeline.hpp"
#include "statement_text.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <cassert>
#include <memory>

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
    // When the caller can cancel: a signal per statement, and one for the transaction's BEGIN (last).
    std::unique_ptr<asio::cancellation_signal[]> signals;

    // The caller's cancellation slot, when connected, reaches every statement's own.
    void connect_cancellation(const std::shared_ptr<batch_run>& self) {
        auto slot = handler.get_cancellation_slot();
        if (!slot.is_connected()) return;
        signals = std::make_unique<asio::cancellation_signal[]>(outcomes.size() + 1);
        slot.assign([weak = std::weak_ptr<batch_run>(self)](asio::cancellation_type type) {
            if (auto run = weak.lock()) run->cancel(type);
        });
    }
    void cancel(asio::cancellation_type type) {
        for (std::size_t i = 0; i <= outcomes.size(); ++i) signals[i].emit(type);
    }
    // Statement i's handler (i == outcomes.size(): the BEGIN), bound to its signal when there is one.
    template <class F>
    detail::query_handler bound(std::size_t i, F f) {
        if (!signals) return detail::query_handler(std::move(f));
        return detail::query_handler(asio::bind_cancellation_slot(signals[i].slot(), std::move(f)));
    }
    // Every statement ends with `ec`, none of them sent.
    void fail_unsent(error_code ec, const std::string& why) {
        for (std::size_t i = 0; i < outcomes.size(); ++i) {
            outcomes[i].error = ec;
            words[i].message = why;
        }
        answered = outcomes.size();
        maybe_done();
    }

    void maybe_done() {
        if (answered < outcomes.size() || !idle) return;
        if (auto slot = handler.get_cancellation_slot(); slot.is_connected()) slot.clear();
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
    for (std::size_t i = 0; i < statements.size(); ++i) {
        auto answered = [run, i](error_code ec, result r) {
            run->outcomes[i].error = ec;
            run->outcomes[i].rows = std::move(r);
            if (ec == asio::error::operation_aborted && run->words[i].message.empty())
                run->words[i].message = "cancelled before its reply came (the server may have run it)";
            ++run->answered;
            run->maybe_done();
        };
        run->pipe->submit(std::move(statements[i].sql), std::move(statements[i].p),
                          run->bound(i, std::move(answered)), &run->words[i]);
    }
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
    run->connect_cancellation(run);
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
    // all, unsent; so does a cancellation that comes before the statements are sent.
    const std::size_t begin_index = statements.size();
    run->pipe->submit(
        std::move(begin), params{},
        run->bound(
            begin_index,
            [run, rest = std::move(statements)](error_code ec, result) mutable {
                // (Only a cancellation completes a statement with operation_aborted; it comes while the
                // BEGIN is in flight: once its reply is read, the statements are submitted in this call.)
                if (ec == asio::error::operation_aborted)
                    return run->fail_unsent(ec, "not sent: the batch was cancelled");
                if (ec)
                    return run->fail_unsent(
                        ec, "not sent: the transaction's BEGIN failed: " +
                                (run->begin_words.message.empty() ? ec.message() : run->begin_words.message));
                // Called inline as the BEGIN's reply is read, before the pipeline can go idle:
                // the statements queue behind it on the same pipeline, and on_idle comes after
                // their replies.
                assert(!run->pipe->idle());
                submit_all(run, std::move(rest));
            }),
        &run->begin_words, detail::pipeline::preparation::unnamed);
}

}  // namespace respool::pg
