#!/usr/bin/env bash
# Certificates and keys for a Flower deployment trial on one machine (docs/flower.md, "Deployment"):
#   <dir>/ca.crt, ca.key                a local certificate authority
#   <dir>/server.crt, server.key        the SuperLink's TLS certificate for localhost / 127.0.0.1 / ::1
#   <dir>/supernode_<k>, _<k>.pub       SuperNode k's authentication key pair (ECDSA P-384, OpenSSH format)
# Usage: scripts/flower_certs.sh [DIR (default: certificates)] [SUPERNODES (default: 4)]
# For a real federation use a certificate issued for the SuperLink's host name by a CA the SuperNodes
# trust, and let each SuperNode's operator make its own key pair and send only the .pub file.
set -euo pipefail
dir=${1:-certificates}
count=${2:-4}
command -v openssl >/dev/null || { echo "flower_certs.sh: openssl is required" >&2; exit 2; }
command -v ssh-keygen >/dev/null || { echo "flower_certs.sh: ssh-keygen (openssh-client) is required" >&2; exit 2; }
mkdir -p "$dir"
cd "$dir"
openssl req -x509 -newkey rsa:3072 -nodes -days 30 -subj "/CN=fairfl trial CA" \
    -keyout ca.key -out ca.crt 2>/dev/null
openssl req -newkey rsa:3072 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nbasicConstraints=CA:FALSE\n' > server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
    -extfile server.ext -out server.crt 2>/dev/null
rm -f server.csr server.ext ca.srl
for ((k = 0; k < count; k++)); do
    rm -f "supernode_$k" "supernode_$k.pub"
    ssh-keygen -q -t ecdsa -b 384 -N "" -C "fairfl supernode $k" -f "supernode_$k"
done
chmod 600 ./*.key supernode_*[0-9]
echo "flower_certs.sh: CA, server certificate (localhost, 127.0.0.1, ::1) and $count SuperNode key pairs in $PWD"
