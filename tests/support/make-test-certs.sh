#!/usr/bin/env bash
# Makes throwaway TLS material for tests with the openssl CLI, in DIR:
#   ca.pem/ca.key           the test CA
#   server.pem/server.key   kfleetd's certificate for 127.0.0.1 and localhost, signed by ca
#   client.pem/client.key   an agent's client certificate, signed by ca
#   other-ca.pem            an unrelated CA (for "unknown certificate" cases)
#   rogue.pem/rogue.key     a server certificate for 127.0.0.1 signed by other-ca
# Usage: make-test-certs.sh DIR
set -euo pipefail
dir=${1:?usage: make-test-certs.sh DIR}
command -v openssl >/dev/null || { echo "make-test-certs: the openssl CLI is missing (apt install openssl)" >&2; exit 1; }
mkdir -p "$dir"
cd "$dir"
umask 077
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() {  # name cn
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 2 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}
leaf() {  # name cn signer ext
  key "$1.key"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$2" 2>/dev/null
  printf '%s\n' "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial -out "$1.pem" \
    -days 2 -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
ca ca "kfleet test CA"
ca other-ca "some other CA"
leaf server 127.0.0.1 ca "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth"
leaf client agent-1 ca "extendedKeyUsage=clientAuth"
leaf rogue 127.0.0.1 other-ca "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth"
chmod 644 ./*.pem
