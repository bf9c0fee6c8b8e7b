// libpq loaded on first use, for the `mariposa` CLI only.
//
// Linking libpq pulls 18 shared libraries (Kerberos, LDAP, GnuTLS, …) into
// every start of the CLI although only `mariposa admin restore --store
// postgresql://…` talks to PostgreSQL; mapping them costs about 17 ms of
// each command (docs/development.md, "How fast the CLI starts"). The CLI
// links this file instead: each libpq function common/pg.cc calls is
// defined here and forwards to libpq.so.5, opened with dlopen the first time
// one is called. The linker then finds every libpq symbol already defined
// and, with --as-needed, records no dependency on libpq
// (cli_startup_test checks it).
//
// A function common/pg.cc starts to call must be added below, or the CLI
// depends on libpq again and cli_startup_test fails.
#include <dlfcn.h>
#include <postgresql/libpq-fe.h>

#include <cstdio>
#include <cstdlib>

namespace {

void *Library() {
  static void *lib = [] {
    void *h = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      // As the dynamic loader would have refused to start the program.
      std::fprintf(stderr,
                   "mariposa: cannot load libpq.so.5, which PostgreSQL stores need: %s\n"
                   "  fix: install the Debian package libpq5 (apt-get install libpq5)\n",
                   dlerror());
      std::exit(1);
    }
    return h;
  }();
  return lib;
}

void *Symbol(const char *name) {
  void *f = dlsym(Library(), name);
  if (f == nullptr) {
    std::fprintf(stderr,
                 "mariposa: libpq.so.5 has no %s (%s); install libpq5 of "
                 "PostgreSQL 10 or later\n",
                 name, dlerror());
    std::exit(1);
  }
  return f;
}

}  // namespace

// RET NAME(PARAMS) { return libpq's NAME(ARGS); }
#define MARIPOSA_PQ(ret, name, params, args)                                         \
  ret name params {                                                                  \
    static const auto libpq_fn = reinterpret_cast<decltype(&::name)>(Symbol(#name)); \
    return libpq_fn args;                                                            \
  }

extern "C" {
MARIPOSA_PQ(PGconn *, PQconnectdbParams, (const char *const *k, const char *const *v, int e), (k, v, e))
MARIPOSA_PQ(PQnoticeProcessor, PQsetNoticeProcessor, (PGconn * c, PQnoticeProcessor p, void *a), (c, p, a))
MARIPOSA_PQ(ConnStatusType, PQstatus, (const PGconn *c), (c))
MARIPOSA_PQ(char *, PQerrorMessage, (const PGconn *c), (c))
MARIPOSA_PQ(void, PQfinish, (PGconn * c), (c))
MARIPOSA_PQ(void, PQreset, (PGconn * c), (c))
MARIPOSA_PQ(char *, PQhost, (const PGconn *c), (c))
MARIPOSA_PQ(char *, PQport, (const PGconn *c), (c))
MARIPOSA_PQ(char *, PQdb, (const PGconn *c), (c))
MARIPOSA_PQ(int, PQsocket, (const PGconn *c), (c))
MARIPOSA_PQ(PQconninfoOption *, PQconninfo, (PGconn * c), (c))
MARIPOSA_PQ(void, PQconninfoFree, (PQconninfoOption * o), (o))
MARIPOSA_PQ(int, PQconsumeInput, (PGconn * c), (c))
MARIPOSA_PQ(PGnotify *, PQnotifies, (PGconn * c), (c))
MARIPOSA_PQ(void, PQfreemem, (void *p), (p))
MARIPOSA_PQ(char *, PQescapeLiteral, (PGconn * c, const char *s, size_t n), (c, s, n))
MARIPOSA_PQ(PGresult *, PQexec, (PGconn * c, const char *q), (c, q))
MARIPOSA_PQ(PGresult *, PQexecParams,
            (PGconn * c, const char *q, int n, const Oid *t, const char *const *v, const int *l, const int *f, int r),
            (c, q, n, t, v, l, f, r))
MARIPOSA_PQ(PGresult *, PQprepare, (PGconn * c, const char *s, const char *q, int n, const Oid *t), (c, s, q, n, t))
MARIPOSA_PQ(PGresult *, PQexecPrepared,
            (PGconn * c, const char *s, int n, const char *const *v, const int *l, const int *f, int r),
            (c, s, n, v, l, f, r))
MARIPOSA_PQ(ExecStatusType, PQresultStatus, (const PGresult *r), (r))
MARIPOSA_PQ(char *, PQresultErrorMessage, (const PGresult *r), (r))
MARIPOSA_PQ(char *, PQresultErrorField, (const PGresult *r, int c), (r, c))
MARIPOSA_PQ(void, PQclear, (PGresult * r), (r))
MARIPOSA_PQ(int, PQntuples, (const PGresult *r), (r))
MARIPOSA_PQ(int, PQnfields, (const PGresult *r), (r))
MARIPOSA_PQ(char *, PQfname, (const PGresult *r, int c), (r, c))
MARIPOSA_PQ(char *, PQcmdTuples, (PGresult * r), (r))
MARIPOSA_PQ(int, PQgetisnull, (const PGresult *r, int t, int c), (r, t, c))
MARIPOSA_PQ(int, PQgetlength, (const PGresult *r, int t, int c), (r, t, c))
MARIPOSA_PQ(char *, PQgetvalue, (const PGresult *r, int t, int c), (r, t, c))
}
