// Sets environment variables for one test and restores them after (the parameter registry and
// the calibration are re-read both times).
#pragma once
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "base/params.h"
#include "tuning/calibration.h"

class ScopedEnv {
 public:
  explicit ScopedEnv(std::initializer_list<std::pair<std::string, std::string>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = getenv(name.c_str());
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
      setenv(name.c_str(), value.c_str(), 1);
    }
    reload();
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value)
        setenv(name.c_str(), value->c_str(), 1);
      else
        unsetenv(name.c_str());
    }
    reload();
  }

 private:
  static void reload() {
    weft::param::reloadForTesting();
    weft::calibrationResetForTesting();
  }
  std::map<std::string, std::optional<std::string>> saved_;
};
