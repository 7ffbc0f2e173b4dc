// What the interop clients share: checks that each print "ok - name" or
// "not ok - name: why", a summary line "<label>: N passed, N failed", and a
// whole-run deadline. The Go tests read those lines (interop_test.go's
// clientSummary), and copy this file next to every script they run.

// CheckFailed is what expect throws: a check's own verdict, as opposed to
// an error from the SDK or the server.
export class CheckFailed extends Error {}

// expect fails the running check with why unless cond holds.
export function expect(cond, why) {
  if (!cond) throw new CheckFailed(why);
}

// text joins a tool result's text content with newlines ("" for none).
export function text(res) {
  return (res?.content || [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}

// checks returns the reporting of one run, whose summary line starts with
// label:
//   report(name, why)  prints one result: ok without why, not ok with it
//                      (white space folded, at most 400 characters);
//   check(name, fn)    runs fn (sync or async) and reports it: any thrown
//                      error fails the check with its message;
//   finish()           prints the summary and exits 1 if any check failed,
//                      0 otherwise;
//   deadline(ms)       reports "deadline" and finishes unless the run is
//                      done within ms; returns the function that cancels it.
export function checks(label) {
  const tally = { passed: 0, failed: 0 };
  function report(name, why) {
    if (why === undefined) {
      tally.passed++;
      console.log(`ok - ${name}`);
    } else {
      tally.failed++;
      console.log(`not ok - ${name}: ${String(why).replace(/\s+/g, " ").slice(0, 400)}`);
    }
  }
  async function check(name, fn) {
    try {
      await fn();
      report(name);
    } catch (e) {
      report(name, e?.message || String(e));
    }
  }
  function finish() {
    console.log(`${label}: ${tally.passed} passed, ${tally.failed} failed`);
    process.exit(tally.failed > 0 ? 1 : 0);
  }
  function deadline(ms) {
    const timer = setTimeout(() => {
      report("deadline", `the run did not finish within ${ms} ms`);
      finish();
    }, ms);
    return () => clearTimeout(timer);
  }
  return { report, check, finish, deadline };
}

// watchTransport records every error the client's transport reports, and
// returns the check that none came.
export function watchTransport(client) {
  const errors = [];
  client.onerror = (e) => errors.push(e?.message || String(e));
  return () => expect(errors.length === 0, errors.slice(0, 3).join(" | "));
}

// close closes the client and reports a failure to close as a failed check.
export async function close(client, report) {
  try {
    await client.close();
  } catch (e) {
    report("close", e?.message || String(e));
  }
}
