#!/usr/bin/env python3
"""The cloud side a VM's boot script talks to, on port 80 of this network namespace
(scripts/package-root-check.sh): Compute Engine's metadata server (metadata.google.internal,
instance name), EC2's IMDSv2 (169.254.169.254: a session token, the instance id), and the
agent's packages as downloads (/packages/NAME). Usage: fake_cloud_metadata.py PACKAGE_DIR"""
import http.server
import os
import sys

PACKAGES = sys.argv[1]


class Handler(http.server.BaseHTTPRequestHandler):
    def reply(self, code, body, ctype="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        if self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self.reply(200, b"imds-session-token")
        self.reply(404, b"not found")

    def do_GET(self):
        if self.path == "/computeMetadata/v1/instance/name":
            if self.headers.get("Metadata-Flavor") != "Google":
                return self.reply(403, b"Metadata-Flavor: Google missing")
            return self.reply(200, b"kfleet-gce-l4-1")
        if self.path == "/latest/meta-data/instance-id":
            if self.headers.get("X-aws-ec2-metadata-token") != "imds-session-token":
                return self.reply(401, b"IMDSv2 token missing")
            return self.reply(200, b"i-0kfleet0000000001")
        if self.path.startswith("/packages/"):
            name = os.path.basename(self.path)
            f = os.path.join(PACKAGES, name)
            if os.path.isfile(f):
                return self.reply(200, open(f, "rb").read(), "application/vnd.debian.binary-package")
        self.reply(404, b"not found")

    def log_message(self, fmt, *args):
        sys.stderr.write("fake-cloud: " + (fmt % args) + "\n")


http.server.ThreadingHTTPServer(("0.0.0.0", 80), Handler).serve_forever()
