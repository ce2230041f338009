# The benchmarks' nginx origin (sourced by download.sh and proxy.sh): one config, written once.
#
# nginx_origin_config WORK PORT SLOW [EXTRA] prints a config for nginx serving WORK/www on 127.0.0.1:PORT (2 workers,
# sendfile, no access log, temporary files under WORK/tmp, its pid and error log in WORK), with SLOW (lines inside
# the server block, e.g. a rate-limited /slow/ location) and EXTRA (more lines inside the http block).
# nginx_origin_start WORK URL starts nginx on WORK/nginx.conf in the background (its PID in $nginx_pid) and waits
# until URL answers.

nginx_origin_config() {
    local work="$1" port="$2" slow="$3" extra="${4:-}"
    cat <<CONF
worker_processes 2;
daemon off;
error_log $work/error.log;
pid $work/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  client_body_temp_path $work/tmp;
  proxy_temp_path $work/tmp;
  fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp;
  scgi_temp_path $work/tmp;
  types { application/vnd.apple.mpegurl m3u8; video/mp2t ts; }
  server {
    listen 127.0.0.1:$port;
    root $work/www;
$slow
  }
$extra
}
CONF
}

nginx_origin_start() {
    local work="$1" url="$2"
    nginx -c "$work/nginx.conf" -e "$work/error.log" &
    nginx_pid=$!
    for _ in $(seq 50); do curl -fs -o /dev/null "$url" && break; sleep 0.1; done
}
