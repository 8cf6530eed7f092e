// JUnit XML through libxml2's text writer (escaping and well-formedness are its business).
#include "report/junit.h"

#include <libxml/xmlwriter.h>

#include <memory>

#include "replay/schedule.h"
#include "util/units.h"

namespace fabemu {
namespace {

struct Case {
  std::string classname, name;
  double seconds = 0;
  std::string failure, failure_type;  // empty: passed
  bool error = false;                 // the failure is an error (not a check that failed)
  std::string skipped;                // non-empty: skipped, and why
  std::string out;                    // system-out: the figures
};

// A step's figures, as lines a CI page shows under the test.
std::string step_figures(const StepReport& s, double time_scale) {
  std::string out =
      printf_string("real fabric: %.6f s from %.6f s; wall clock: %.3f s (x%s)\n", s.seconds,
                    s.start_s, s.wall_seconds, format_factor(time_scale).c_str());
  if (!s.library.empty()) out += "library " + s.library + ", transport " + s.transport + "\n";
  for (const SizeResult& r : s.results) {
    out += printf_string("size %s: busbw %.4g GB/s, time %.4g us", format_size(r.size).c_str(),
                         r.busbw_gbps, r.time_us);
    if (r.pred_busbw_gbps > 0)
      out += printf_string(" (model %.4g GB/s, ratio %.2f)", r.pred_busbw_gbps, r.ratio());
    out += printf_string(", %llu wrong\n", static_cast<unsigned long long>(r.wrong));
  }
  for (const FlowResult& f : s.flows)
    out += printf_string("%s %s>%s: %s (fair %s)%s\n", f.role.c_str(), f.from.c_str(), f.to.c_str(),
                         format_rate_short(f.bps).c_str(),
                         f.fair_bps > 0 ? format_rate_short(f.fair_bps).c_str() : "-",
                         f.failure.empty() ? "" : (": " + f.failure).c_str());
  if (s.receiver_bps) out += "receiver: " + format_rate_short(*s.receiver_bps) + "\n";
  if (s.replay) {
    for (size_t i = 0; i < s.replay->iterations.size(); ++i)
      out += printf_string("iteration %zu: %s\n", i + 1,
                           replay::describe_iteration(s.replay->iterations[i]).c_str());
    if (s.replay->model) out += "model: " + replay::describe_iteration(*s.replay->model) + "\n";
    out += printf_string("%llu elements checked, %llu wrong\n",
                         static_cast<unsigned long long>(s.replay->checked),
                         static_cast<unsigned long long>(s.replay->wrong));
  }
  if (!s.note.empty()) out += "note: " + s.note + "\n";
  return out;
}

std::vector<Case> cases_of(const JunitRun& run) {
  const RunReport& r = run.report;
  const std::string cls = "fabemu." + r.lab;
  std::vector<Case> cases;
  if (!run.up_error.empty()) return {{cls, "up", 0, run.up_error, "lab not built", true, "", ""}};
  Case reach{cls, "reachability", r.reach_seconds, "", "", false, "", ""};
  reach.out = printf_string("%d of %d pairs of hosts answered\n", r.reachable, r.pairs);
  if (r.reachable < r.pairs) {
    reach.failure =
        printf_string("%d of %d pairs of hosts did not answer", r.pairs - r.reachable, r.pairs);
    reach.failure_type = "unreachable";
  }
  cases.push_back(reach);
  for (const StepReport& s : r.steps) {
    Case c{cls + ".workload", s.title, s.wall_seconds, "", "", false, "", ""};
    c.out = step_figures(s, run.time_scale);
    if (!s.ok) {
      c.failure = s.failure.empty() ? "the step failed" : s.failure;
      c.failure_type = "step failed";
    }
    cases.push_back(c);
  }
  if (!run.not_run.empty())
    cases.push_back({cls + ".workload", "workload", 0, "", "", false, run.not_run, ""});
  for (const ExpectResult& e : r.expectations)
    cases.push_back({cls + ".expect", e.what, 0, e.ok ? "" : "expectation not met: " + e.what,
                     e.ok ? "" : "expectation", false, "", ""});
  if (!run.report_error.empty())
    cases.push_back({cls, "report", 0, run.report_error, "report not written", true, "", ""});
  if (!run.down_error.empty())
    cases.push_back({cls, "down", 0, run.down_error, "lab not taken down", true, "", ""});
  return cases;
}

struct Counts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  void add(const std::vector<Case>& cases) {
    for (const Case& c : cases) {
      ++tests;
      failures += !c.failure.empty() && !c.error;
      errors += !c.failure.empty() && c.error;
      skipped += !c.skipped.empty();
    }
  }
};

using Writer = std::unique_ptr<xmlTextWriter, void (*)(xmlTextWriterPtr)>;

const xmlChar* x(const char* s) {
  return reinterpret_cast<const xmlChar*>(s);
}
void attr(xmlTextWriterPtr w, const char* name, const std::string& value) {
  xmlTextWriterWriteAttribute(w, x(name), x(value.c_str()));
}
std::string seconds(double s) {
  return printf_string("%.3f", s < 0 ? 0 : s);
}
// tests, failures, errors, skipped and time: a testsuite's or the testsuites' attributes.
void totals(xmlTextWriterPtr w, const Counts& n, double time) {
  attr(w, "tests", std::to_string(n.tests));
  attr(w, "failures", std::to_string(n.failures));
  attr(w, "errors", std::to_string(n.errors));
  attr(w, "skipped", std::to_string(n.skipped));
  attr(w, "time", seconds(time));
}

void write_case(xmlTextWriterPtr w, const Case& c) {
  xmlTextWriterStartElement(w, x("testcase"));
  attr(w, "classname", c.classname);
  attr(w, "name", c.name);
  attr(w, "time", seconds(c.seconds));
  if (!c.failure.empty()) {
    xmlTextWriterStartElement(w, x(c.error ? "error" : "failure"));
    attr(w, "message", c.failure);
    attr(w, "type", c.failure_type);
    xmlTextWriterWriteString(w, x(c.failure.c_str()));
    xmlTextWriterEndElement(w);
  } else if (!c.skipped.empty()) {
    xmlTextWriterStartElement(w, x("skipped"));
    attr(w, "message", c.skipped);
    xmlTextWriterEndElement(w);
  }
  if (!c.out.empty()) xmlTextWriterWriteElement(w, x("system-out"), x(c.out.c_str()));
  xmlTextWriterEndElement(w);
}

void write_suite(xmlTextWriterPtr w, const JunitRun& run, const std::vector<Case>& cases) {
  const RunReport& r = run.report;
  Counts n;
  n.add(cases);
  xmlTextWriterStartElement(w, x("testsuite"));
  attr(w, "name", "fabemu run " + r.lab);
  totals(w, n, run.wall_seconds);
  if (!run.timestamp.empty()) attr(w, "timestamp", run.timestamp);
  if (!r.scenario_file.empty()) attr(w, "file", r.scenario_file);
  xmlTextWriterStartElement(w, x("properties"));
  auto property = [&](const char* name, const std::string& value) {
    xmlTextWriterStartElement(w, x("property"));
    attr(w, "name", name);
    attr(w, "value", value);
    xmlTextWriterEndElement(w);
  };
  property("lab", r.lab);
  property("scenario", r.scenario_file);
  property("seed", std::to_string(r.seed));
  property("time_scale", format_factor(run.time_scale));
  if (r.link_mode) property("link_model", std::string(shaping_mode_name(*r.link_mode)));
  if (!run.report_dir.empty()) property("report", run.report_dir + "/report.html");
  xmlTextWriterEndElement(w);
  for (const Case& c : cases) write_case(w, c);
  std::string notes;
  for (const std::string& n : r.notes) notes += "note: " + n + "\n";
  if (!notes.empty()) xmlTextWriterWriteElement(w, x("system-out"), x(notes.c_str()));
  xmlTextWriterEndElement(w);
}

}  // namespace

std::string junit_xml(const std::vector<JunitRun>& runs) {
  xmlBufferPtr buf = xmlBufferCreate();
  Writer w(xmlNewTextWriterMemory(buf, 0), xmlFreeTextWriter);
  xmlTextWriterSetIndent(w.get(), 1);
  xmlTextWriterSetIndentString(w.get(), x("  "));
  xmlTextWriterStartDocument(w.get(), nullptr, "UTF-8", nullptr);
  std::vector<std::vector<Case>> suites;
  Counts n;
  double time = 0;
  for (const JunitRun& run : runs) {
    suites.push_back(cases_of(run));
    n.add(suites.back());
    time += run.wall_seconds;
  }
  xmlTextWriterStartElement(w.get(), x("testsuites"));
  attr(w.get(), "name", "fabemu run");
  totals(w.get(), n, time);
  for (size_t i = 0; i < runs.size(); ++i) write_suite(w.get(), runs[i], suites[i]);
  xmlTextWriterEndDocument(w.get());
  w.reset();  // flushes into buf
  std::string out(reinterpret_cast<const char*>(xmlBufferContent(buf)),
                  static_cast<size_t>(xmlBufferLength(buf)));
  xmlBufferFree(buf);
  return out;
}

}  // namespace fabemu
