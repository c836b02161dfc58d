// tetherrun's output forwarding: each PE's stdout and stderr pipes, read without blocking and written line by line
// (with the "[rank] " prefix under --tag-output) to tetherrun's own stdout/stderr or to --output-dir files.
#pragma once

#include <cstddef>
#include <string>

namespace tetherrun {

// A destination for forwarded output. A sink whose reader went away (EPIPE) is dropped silently.
struct Sink {
  int fd = -1;
  bool dead = false;
  void write(const char* p, size_t n);  // all n bytes, waiting while the pipe is full
};

// One output pipe of one PE, forwarded line by line with the "[rank] " prefix.
struct Stream {
  int fd = -1;  // read end, -1 once closed
  Sink* sink = nullptr;
  std::string prefix;
  std::string partial;  // bytes after the last newline
  bool atLineStart = true;

  // Reads one chunk; returns false at EOF or error (the stream is closed then).
  bool pump();
  // Forwards the complete lines of p[0, n) and keeps the rest for later (a line past 64 KiB goes on in pieces).
  void feed(const char* p, size_t n);
  // Reads what is left without waiting (writers may linger in grandchildren), then ends a partial last line.
  void drain();
  void close();
};

}  // namespace tetherrun
