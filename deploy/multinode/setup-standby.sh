#!/usr/bin/env bash
# Run on db2 as the postgres user, with db2's cluster stopped and its data
# directory empty: makes db2 a streaming standby of db1 (application_name
# db2, matched by synchronous_standby_names on db1).
set -euo pipefail
DATA=${DATA:-/var/lib/postgresql/15/main}
pg_basebackup -d "host=db1.example.com user=replicator application_name=db2" -D "$DATA" -R -X stream -P
echo "now: systemctl start postgresql@15-main"
