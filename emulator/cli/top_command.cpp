// `top LAB`: a live view of the lab's busiest directions, redrawn each interval with ncurses
// (q or ^C quits); `--batch` prints the frames one after another instead.
#include <ncurses.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "report/top_view.h"
#include "session/observe.h"

namespace fabemu::cli {
namespace {

struct TopArgs {
  std::string lab;
  double interval = 1;
  bool batch = false;
  int frames = 0;  // 0: until stopped
};

// Two reads in a row make a frame's rates.
class TopReader {
 public:
  explicit TopReader(std::unique_ptr<session::LabWatch> w) : watch_(std::move(w)) {
    for (size_t d = 0; d < 2 * watch_->model().topo.links.size(); ++d)
      local_.push_back(watch_->local(d));
    last_ = watch_->read();
  }
  bool gone() const { return watch_->gone(); }
  std::vector<std::string> next(size_t rows, size_t width) {
    session::LabReading now = watch_->read();
    const TopInput in{watch_->model(),   last_.sample, now.sample, watch_->paths().lab,
                      watch_->shaping(), now.step,     now.error,  now.fabric_s,
                      now.read_seconds,  local_};
    auto lines = top_frame(in, rows, width);
    last_ = std::move(now);
    return lines;
  }

 private:
  std::unique_ptr<session::LabWatch> watch_;
  std::vector<bool> local_;
  session::LabReading last_;
};

bool stopped() {
  return session::InterruptGuard::signal().load() != 0;
}

// The lab was taken down (its run ended, say): nothing left to show.
int lab_gone(const TopArgs& a) {
  std::fprintf(stderr, "top: lab %s is down\n", a.lab.c_str());
  return kExitOk;
}

int run_batch(TopReader& reader, const TopArgs& a) {
  const auto period = std::chrono::duration<double>(a.interval);
  for (int k = 0; a.frames == 0 || k < a.frames; ++k) {
    const auto due = std::chrono::steady_clock::now() + period;
    while (std::chrono::steady_clock::now() < due && !stopped())
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (stopped()) break;
    if (reader.gone()) return lab_gone(a);
    for (const std::string& line : reader.next(40, 160)) std::printf("%s\n", line.c_str());
    std::printf("\n");
    std::fflush(stdout);
  }
  return kExitOk;
}

int run_screen(TopReader& reader, const TopArgs& a) {
  initscr();
  cbreak();  // ^C still raises SIGINT, which the guard turns into a flag
  noecho();
  curs_set(0);
  keypad(stdscr, TRUE);
  timeout(50);
  int frames = 0;
  // The first frame's rates need an interval since the first read.
  const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(a.interval));
  auto due = std::chrono::steady_clock::now() + period;
  mvaddstr(0, 0, ("fabemu top: reading lab " + a.lab + "...").c_str());
  refresh();
  while (!stopped() && (a.frames == 0 || frames < a.frames)) {
    const int key = getch();
    if (key == 'q' || key == 'Q') break;
    if (std::chrono::steady_clock::now() < due) continue;
    due += period;
    if (reader.gone()) {
      endwin();
      return lab_gone(a);
    }
    int rows = 0, cols = 0;
    getmaxyx(stdscr, rows, cols);
    const auto lines = reader.next(size_t(std::max(rows - 5, 1)), size_t(std::max(cols, 20)));
    erase();
    for (size_t i = 0; i < lines.size() && int(i) < rows; ++i) {
      if (i == 4) attron(A_REVERSE);
      mvaddnstr(int(i), 0, lines[i].c_str(), cols);
      if (i == 4) attroff(A_REVERSE);
    }
    refresh();
    ++frames;
  }
  endwin();
  return kExitOk;
}

int cmd_top(const TopArgs& a, const LabPaths& base) {
  if (auto r = session::need_root("top"); !r) return report_error(r.error());
  auto watch = session::LabWatch::open(a.lab, base);
  if (!watch) return report_error(watch.error());
  session::InterruptGuard guard;
  TopReader reader(std::move(*watch));
  return a.batch || !::isatty(STDOUT_FILENO) ? run_batch(reader, a) : run_screen(reader, a);
}

}  // namespace

void add_top_command(CLI::App& app, CommandLine& cl) {
  auto a = std::make_shared<TopArgs>();
  auto* cmd = app.add_subcommand(
      "top",
      "A live view of a lab: its busiest directions (rates in the real fabric's units), drops, "
      "CE marks, pause, links down and the step playing; q or ^C quits");
  cmd->add_option("lab", a->lab, "Lab name")->required();
  cmd->add_option("--interval", a->interval, "Seconds (wall clock) between frames")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_flag("--batch", a->batch,
                "Print the frames one after another (as when stdout is not a terminal)");
  cmd->add_option("-n,--frames", a->frames, "Stop after this many frames")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([a, &cl] { cl.exit = cmd_top(*a, cl.base); });
}

}  // namespace fabemu::cli
