#!/usr/bin/env python3
"""Writes a C++ source holding the console's files (the binary serves them;
no CDN, no files beside it): embed.py OUT.cc PREFIX FILE... where each FILE's
path after PREFIX is its URL under /console/."""
import mimetypes
import sys

TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png",
         ".json": "application/json"}


def main():
    out, prefix, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    lines = ['#include "gateway/console_assets.h"', "", "#include <cstring>", "", "namespace mariposa::gateway {",
             "namespace {"]
    entries = []
    for i, f in enumerate(sorted(files)):
        data = open(f, "rb").read()
        rel = f[f.index(prefix) + len(prefix):].lstrip("/")
        ext = rel[rel.rfind("."):]
        mime = TYPES.get(ext) or mimetypes.guess_type(rel)[0] or "application/octet-stream"
        body = ",".join(str(b) for b in data)
        lines.append(f"const unsigned char kData{i}[] = {{{body}{',' if data else ''}0}};")
        entries.append(f'    {{"/console/{rel}", "{mime}", kData{i}, {len(data)}}},')
    lines += ["const Asset kAssets[] = {"] + entries + ["};", "}  // namespace", "",
              "const Asset* FindAsset(const std::string& path) {",
              "  for (const Asset& a : kAssets) {",
              "    if (path == a.path) return &a;",
              "  }",
              "  return nullptr;",
              "}", "", "}  // namespace mariposa::gateway", ""]
    open(out, "w").write("\n".join(lines))


if __name__ == "__main__":
    main()
