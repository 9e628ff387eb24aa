"""The Helm chart (helm/sluice), rendered without a cluster: a small renderer built from Debian's
Go text/template, sprig and yaml.v3 (go/chart_render) does what `helm template` does; every
rendered object is checked against the Kubernetes schemas (k8s/check_objects.mjs,
kubernetes-models from npm) and against the rules helm lint and a reviewer apply (labels,
probes, resources, non-root); bad values fail with their message; and the command line and
properties file the chart gives the pod start the real sluice binary."""
import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request

import pytest
import yaml
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from harness import Sluice, connect, kafka_request, read_frame, sluice_binary
from sqs_support import client as sqs_client
from tls_support import Pki, api_versions_ok, client_context, tls_closed, tls_connect
from upstream_support import NativeUpstream, free_port_block

HERE = os.path.dirname(os.path.abspath(__file__))
CHART = os.path.join(HERE, "..", "..", "helm", "sluice")
K8S = os.path.join(HERE, "k8s")

RECOMMENDED_LABELS = ("helm.sh/chart", "app.kubernetes.io/name", "app.kubernetes.io/instance",
                      "app.kubernetes.io/version", "app.kubernetes.io/managed-by")


@pytest.fixture(scope="module")
def renderer():
    if shutil.which("go") is None or not os.path.isdir(
            "/usr/share/gocode/src/github.com/Masterminds/sprig"):
        pytest.fail("go and golang-github-masterminds-sprig-dev are needed (scripts/install-deps)")
    out = tempfile.mkdtemp(prefix="chart-render-")
    path = os.path.join(out, "chart_render")
    env = dict(os.environ, GO111MODULE="off", GOPATH="/usr/share/gocode",
               GOCACHE=os.path.join(out, "cache"), GOFLAGS="")
    r = subprocess.run(["go", "build", "-o", path, "."],
                       cwd=os.path.join(HERE, "go", "chart_render"), env=env, timeout=600,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    yield path
    shutil.rmtree(out, ignore_errors=True)


def render_raw(renderer, *sets, name="sluice", namespace="default", files=()):
    cmd = [renderer, CHART, "--name", name, "--namespace", namespace]
    for f in files:
        cmd += ["-f", str(f)]
    for s in sets:
        cmd += ["--set", s]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def render(renderer, *sets, **kw):
    r = render_raw(renderer, *sets, **kw)
    assert r.returncode == 0, r.stderr
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def by_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def one(objects, kind):
    found = by_kind(objects, kind)
    assert len(found) == 1, f"{len(found)} objects of kind {kind}"
    return found[0]


def schema_check(objects):
    r = subprocess.run(["node", os.path.join(K8S, "check_objects.mjs")], input=json.dumps(objects),
                       capture_output=True, text=True, timeout=120, cwd=K8S)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("\nok ") + r.stdout.startswith("ok ") == len(objects), r.stdout


def lint(objects):
    """What helm lint and a review would refuse in rendered objects."""
    for o in objects:
        labels = o["metadata"].get("labels", {})
        for label in RECOMMENDED_LABELS:
            assert label in labels, f"{o['kind']} {o['metadata']['name']}: no label {label}"
        assert o["metadata"]["namespace"], o["kind"]
    for w in by_kind(objects, "StatefulSet") + by_kind(objects, "Deployment"):
        pod = w["spec"]["template"]
        selector = w["spec"]["selector"]["matchLabels"]
        assert selector.items() <= pod["metadata"]["labels"].items()
        spec = pod["spec"]
        # A Service named sluice would put SLUICE_PORT=tcp://... into the pod.
        assert spec["enableServiceLinks"] is False
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] != 0
        for c in spec["containers"] + spec.get("initContainers", []):
            image = c["image"]
            assert ":" in image and not image.endswith(":latest"), image
            assert c["resources"]["requests"]["cpu"] and c["resources"]["requests"]["memory"]
            assert c["resources"]["limits"]["memory"]
            assert c["securityContext"]["allowPrivilegeEscalation"] is False
            assert c["securityContext"]["readOnlyRootFilesystem"] is True
        c = spec["containers"][0]
        port_names = {p["name"] for p in c["ports"]}
        for probe in ("livenessProbe", "readinessProbe"):
            assert probe in c, probe
            target = c[probe].get("httpGet") or c[probe].get("tcpSocket")
            assert target["port"] in port_names
        volumes = {v["name"] for v in spec["volumes"]}
        claims = {t["metadata"]["name"] for t in w["spec"].get("volumeClaimTemplates", [])}
        for m in c["volumeMounts"]:
            assert m["name"] in volumes | claims, m["name"]
    pods = [w["spec"]["template"]["metadata"]["labels"]
            for w in by_kind(objects, "StatefulSet") + by_kind(objects, "Deployment")]
    pod_ports = {p["name"] for w in by_kind(objects, "StatefulSet") + by_kind(objects, "Deployment")
                 for p in container(w)["ports"]}
    for svc in by_kind(objects, "Service"):
        assert any(svc["spec"]["selector"].items() <= p.items() for p in pods)
        names = [p["name"] for p in svc["spec"]["ports"]]
        assert len(names) == len(set(names)), names
        for port in svc["spec"]["ports"]:
            assert port["targetPort"] in pod_ports, port


def container(workload):
    return workload["spec"]["template"]["spec"]["containers"][0]


def properties(objects):
    text = one(objects, "ConfigMap")["data"]["sluice.properties"]
    out = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            k, v = line.split("=", 1)
            out[k] = v
    return out


def test_native_mode_is_one_statefulset_with_a_volume_and_valid_objects(renderer):
    objects = render(renderer)
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == ["ConfigMap", "PodDisruptionBudget", "Service", "Service", "ServiceAccount",
                     "StatefulSet"]
    sts = one(objects, "StatefulSet")
    assert sts["spec"]["replicas"] == 1
    claim = sts["spec"]["volumeClaimTemplates"][0]
    assert claim["metadata"]["name"] == "data"
    assert claim["spec"]["resources"]["requests"]["storage"] == "10Gi"
    headless = [s for s in by_kind(objects, "Service") if s["spec"].get("clusterIP") == "None"]
    assert len(headless) == 1 and sts["spec"]["serviceName"] == headless[0]["metadata"]["name"]
    c = container(sts)
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {
        "kafka": 9092, "http": 8082, "sqs": 9324}
    assert "--data-dir=/data" in c["args"]
    assert {m["mountPath"] for m in c["volumeMounts"]} >= {"/data", "/etc/sluice/sluice.properties"}
    assert properties(objects) == {"num.partitions": "1", "log.retention.hours": "168"}
    lint(objects)
    schema_check(objects)


UPSTREAM = ("mode=upstream", "upstream.bootstrapServers=kafka-0:9092,kafka-1:9092",
            "kafka.advertisedHost=kafka.example.com", "upstream.brokerIds={0,1,2}")


def env_of(c):
    return {e["name"]: e for e in c["env"]}


def test_upstream_mode_is_a_deployment_scaled_by_an_autoscaler(renderer, tmp_path):
    objects = render(renderer, *UPSTREAM)
    assert not by_kind(objects, "StatefulSet")
    dep = one(objects, "Deployment")
    hpa = one(objects, "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                            "name": dep["metadata"]["name"]}
    assert hpa["spec"]["minReplicas"] == 2 and hpa["spec"]["maxReplicas"] == 10
    assert "replicas" not in dep["spec"]  # the autoscaler owns the count
    assert all("persistentVolumeClaim" not in v for v in dep["spec"]["template"]["spec"]["volumes"])
    assert properties(objects)["upstream.bootstrap.servers"] == "kafka-0:9092,kafka-1:9092"
    # The Kafka proxy: the bootstrap and upstream broker N on 9093 + N, advertised with the
    # host clients reach; proxy.node.port.base is written for sluice, so both agree.
    c = container(dep)
    args = c["args"]
    assert "--kafka=0.0.0.0:9092" in args and "--sqs=0.0.0.0:9324" in args
    assert "--advertise-kafka=kafka.example.com:9092" in args
    assert properties(objects)["proxy.node.port.base"] == "9093"
    expected = {"kafka": 9092, "node-0": 9093, "node-1": 9094, "node-2": 9095, "http": 8082,
                "sqs": 9324}
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == expected
    service = [s for s in by_kind(objects, "Service") if s["spec"].get("clusterIP") != "None"]
    assert len(service) == 1  # any pod serves any node port: one Service in front of them all
    assert {p["name"]: p["port"] for p in service[0]["spec"]["ports"]} == expected
    assert all(p["targetPort"] == p["name"] for p in service[0]["spec"]["ports"])
    # The SQS fleet: each pod's own address from the downward API, expanded by Kubernetes
    # ($(POD_IP) must be defined before the variable that uses it).
    env = env_of(c)
    names = [e["name"] for e in c["env"]]
    assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert env["SLUICE_SQS_FLEET_URL"]["value"] == "http://$(POD_IP):9324"
    assert names.index("POD_IP") < names.index("SLUICE_SQS_FLEET_URL")
    assert dep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= 35
    assert one(objects, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"].items() <= \
        dep["spec"]["template"]["metadata"]["labels"].items()
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    lint(objects)
    schema_check(objects)

    # Both fronts off: the HTTP fronts alone, nothing of the proxy or the fleet.
    http_only = render(renderer, "mode=upstream", "upstream.bootstrapServers=k:9092",
                       "ports.kafka=0", "ports.sqs=0")
    c = container(one(http_only, "Deployment"))
    assert "--kafka=off" in c["args"] and "--sqs=off" in c["args"]
    assert "SLUICE_SQS_FLEET_URL" not in env_of(c)
    assert "proxy.node.port.base" not in properties(http_only)
    assert {p["name"] for p in c["ports"]} == {"http"}

    # The addresses the pods, the Service and sluice must agree on come from values only.
    values = tmp_path / "fleet-url.yaml"
    values.write_text(yaml.safe_dump({"config": {"sqs.fleet.url": "http://lb:9324"}}))
    r = subprocess.run([renderer, CHART, "-f", str(values)] + [
        a for s in UPSTREAM for a in ("--set", s)], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "config.sqs.fleet.url: the chart sets it from its values" in r.stderr, r.stderr

    fixed = render(renderer, "mode=upstream", "upstream.bootstrapServers=k:9092", "ports.kafka=0",
                   "autoscaling.enabled=false", "replicaCount=3")
    assert not by_kind(fixed, "HorizontalPodAutoscaler")
    assert one(fixed, "Deployment")["spec"]["replicas"] == 3


def test_upstream_proxy_on_one_tls_port_with_sni_or_on_pinned_node_ports(renderer):
    sni = render(renderer, *UPSTREAM, "kafka.protocol=SSL",
                 "proxy.sniHostPattern=broker-$(nodeId).kafka.example.com",
                 "service.type=LoadBalancer")
    c = container(one(sni, "Deployment"))
    assert "--kafka=SSL://0.0.0.0:9092" in c["args"]
    # In the properties file, where Kubernetes expands no $(...).
    props = properties(sni)
    assert props["proxy.sni.host.pattern"] == "broker-$(nodeId).kafka.example.com"
    assert "proxy.node.port.base" not in props
    assert not any("nodeId" in a for a in c["args"])
    service = [s for s in by_kind(sni, "Service") if s["spec"].get("clusterIP") != "None"][0]
    assert service["spec"]["type"] == "LoadBalancer"
    assert {p["name"] for p in service["spec"]["ports"]} == {"kafka", "http", "sqs"}
    lint(sni)

    # NodePort: clients are told the ports, so the node ports are the same numbers.
    pinned = render(renderer, *UPSTREAM, "service.type=NodePort", "ports.kafka=31000",
                    "upstream.brokerIds={1001,1002}", "proxy.nodePortBase=30000")
    service = [s for s in by_kind(pinned, "Service") if s["spec"].get("clusterIP") != "None"][0]
    ports = {p["name"]: p for p in service["spec"]["ports"]}
    for name, port in (("kafka", 31000), ("node-1001", 31001), ("node-1002", 31002)):
        assert ports[name]["port"] == port and ports[name]["nodePort"] == port
    assert "nodePort" not in ports["http"]
    assert properties(pinned)["proxy.node.port.base"] == "30000"
    lint(pinned)
    schema_check(sni + pinned)


def test_optional_objects_monitor_ingress_secret_and_users(renderer):
    objects = render(renderer, "serviceMonitor.enabled=true", "ingress.enabled=true",
                     "ingress.className=nginx", "secrets.files.alice-password=s3cret",
                     "name=prod", name="prod", namespace="streams")
    monitor = one(objects, "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["port"] == "http"
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    ingress = one(objects, "Ingress")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": "prod-sluice", "port": {"name": "http"}}
    secret = one(objects, "Secret")
    assert base64.b64decode(secret["data"]["alice-password"]) == b"s3cret"
    sts = one(objects, "StatefulSet")
    assert sts["metadata"]["namespace"] == "streams"
    mounts = {m["name"]: m for m in container(sts)["volumeMounts"]}
    assert mounts["secrets"]["mountPath"] == "/etc/sluice/secrets"
    assert mounts["secrets"]["readOnly"] is True
    # A change of the secret's content rolls the pod.
    annotations = sts["spec"]["template"]["metadata"]["annotations"]
    other = render(renderer, "serviceMonitor.enabled=true", "ingress.enabled=true",
                   "ingress.className=nginx", "secrets.files.alice-password=other",
                   name="prod", namespace="streams")
    assert (one(other, "StatefulSet")["spec"]["template"]["metadata"]["annotations"]
            ["checksum/secrets"] != annotations["checksum/secrets"])
    # No secret, not even its base64, in the pod spec or the config.
    assert "s3cret" not in json.dumps(sts) and "czNjcmV0" not in json.dumps(sts)
    lint(objects)
    schema_check(objects)


def test_users_are_created_by_an_init_container_from_the_secret(renderer, tmp_path):
    values = tmp_path / "users.yaml"
    values.write_text(yaml.safe_dump({
        "secrets": {"files": {"alice-password": "pw-a", "bob-password": "pw-b"}},
        "users": [{"name": "alice", "passwordKey": "alice-password"},
                  {"name": "bob", "passwordKey": "bob-password"}]}))
    r = subprocess.run([renderer, CHART, "-f", str(values)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    objects = [d for d in yaml.safe_load_all(r.stdout) if d]
    init = one(objects, "StatefulSet")["spec"]["template"]["spec"]["initContainers"][0]
    script = init["command"][-1]
    assert 'sluice users set "alice" --data-dir /data < /etc/sluice/secrets/alice-password' in script
    assert 'sluice users set "bob" --data-dir /data < /etc/sluice/secrets/bob-password' in script
    assert {m["mountPath"] for m in init["volumeMounts"]} == {"/data", "/etc/sluice/secrets"}
    lint(objects)
    schema_check(objects)


@pytest.mark.parametrize("sets,message", [
    (["mode=cluster"], 'mode: native or upstream, not "cluster"'),
    (["replicaCount=3"], "replicaCount: the native mode runs one pod"),
    (["mode=upstream"], "upstream.bootstrapServers: the upstream mode needs"),
    (["image.tag=latest"], "image.tag: name a version, not latest"),
    (["serviceMonitor.enabled=true", "ports.http=0"], "serviceMonitor.enabled: /metrics is served"),
    (["ingress.enabled=true", "ports.http=0"], "ingress.enabled: the Ingress routes to the HTTP"),
    (["kafka.protocol=TLS"], 'kafka.protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, not "TLS"'),
    (["mode=upstream", "upstream.bootstrapServers=k:9092"],
     "kafka.advertisedHost: the Kafka proxy (upstream mode) tells clients this host"),
    (UPSTREAM[:3], "upstream.brokerIds: list the Kafka cluster's broker ids"),
    ([*UPSTREAM, "upstream.brokerIds={0,65000}"],
     "upstream.brokerIds: broker 65000 would be served on port 74093 (proxy.nodePortBase 9093 + "
     "65000), over 65535"),
    ([*UPSTREAM, "upstream.brokerIds={1,1}"], "upstream.brokerIds: 1 is listed twice"),
    ([*UPSTREAM, "upstream.brokerIds={one}"], 'upstream.brokerIds: "one" is not a broker id'),
    ([*UPSTREAM, "proxy.nodePortBase=8080"],
     "upstream.brokerIds: broker 2 would be served on port 8082, which is ports.http"),
    ([*UPSTREAM, "proxy.sniHostPattern=broker-$(nodeId).example.com"],
     "proxy.sniHostPattern: SNI routing needs TLS; kafka.protocol is PLAINTEXT"),
    ([*UPSTREAM, "kafka.protocol=SSL", "proxy.sniHostPattern=broker.example.com"],
     'proxy.sniHostPattern: "broker.example.com" names no broker'),
    ([*UPSTREAM, "service.type=NodePort"],
     "service.type NodePort: Kafka clients are told port 9092, which must then be the node port"),
    ([*UPSTREAM, "terminationGracePeriodSeconds=20"],
     "terminationGracePeriodSeconds: 20 is too short for the SQS fleet"),
])
def test_bad_values_fail_with_their_message(renderer, sets, message):
    r = render_raw(renderer, *sets)
    assert r.returncode != 0
    assert message in r.stderr, r.stderr


def test_a_listener_turned_off_has_no_port_and_probes_use_another(renderer):
    objects = render(renderer, "ports.sqs=0")
    c = container(one(objects, "StatefulSet"))
    assert "--sqs=off" in c["args"]
    assert "sqs" not in {p["name"] for p in c["ports"]}
    assert all(p["name"] != "sqs" for s in by_kind(objects, "Service") for p in s["spec"]["ports"])
    no_http = render(renderer, "ports.http=0")
    c = container(one(no_http, "StatefulSet"))
    assert c["livenessProbe"]["tcpSocket"]["port"] == "kafka"
    lint(no_http)
    schema_check(no_http)


def test_the_charts_command_line_and_config_start_sluice(renderer, tmp_path):
    objects = render(renderer)
    props = dict(properties(objects))
    props["num.partitions"] = "3"
    config = tmp_path / "sluice.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    env = {"POD_NAME": "sluice-0", "POD_NAMESPACE": "default", "POD_IP": "10.0.0.7"}
    args = []
    for a in container(one(objects, "StatefulSet"))["args"]:
        a = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a)
        flag = a.split("=", 1)[0]
        if flag in ("--data-dir", "--kafka", "--http", "--sqs"):
            continue  # the harness binds loopback on free ports and gives a temporary data dir
        if flag == "--config":
            a = f"--config={config}"
        args.append(a)
    assert "--advertise-kafka=sluice-0.sluice-headless.default.svc.cluster.local:9092" in args
    s = Sluice(args=args, sqs=True).start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{s.http_port}/readyz", timeout=10) as r:
            assert r.status == 200
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{s.kafka_port}"})
        md = admin.list_topics(timeout=10)
        assert [f"{b.host}:{b.port}" for b in md.brokers.values()] == [
            "sluice-0.sluice-headless.default.svc.cluster.local:9092"]
        # CreateTopics v4 without a partition count takes num.partitions (from the ConfigMap's
        # file). Sent on this connection: a client would go to the advertised name.
        body = struct.pack(">ih", 1, 1) + b"t" + struct.pack(">ihii", -1, -1, 0, 0)
        body += struct.pack(">i?", 10000, False)
        with connect(s.kafka_port) as sock:
            sock.sendall(kafka_request(19, 4, 7, body))
            answer = read_frame(sock)
        assert struct.unpack(">i", answer[:4])[0] == 7
        md = admin.list_topics(topic="t", timeout=10)
        assert len(md.topics["t"].partitions) == 3  # num.partitions from the ConfigMap
    finally:
        s.close()


def pod_env(c, pod):
    """The container's environment as Kubernetes gives it: fieldRef values from `pod`, and
    $(VAR) in a value expanded from the variables before it (an unknown one left as is)."""
    env = {}
    for e in c["env"]:
        if "valueFrom" in e:
            env[e["name"]] = pod[e["valueFrom"]["fieldRef"]["fieldPath"]]
        else:
            env[e["name"]] = re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)),
                                    e["value"])
    return env


def start_chart_pod(renderer, workdir, upstream, ports, pod_ip, sets=(), files=()):
    """The upstream mode's pod as Kubernetes would start it from the chart: its args, its
    properties file, its environment from the downward API (status.podIP = pod_ip); the
    listeners on 127.0.0.1 at `ports` (kafka, http, sqs; 0: off). Returns (Sluice, objects)."""
    kafka, http, sqs = ports
    objects = render(renderer, "mode=upstream", f"upstream.bootstrapServers={upstream.bootstrap}",
                     f"ports.kafka={kafka}", f"ports.http={http}", f"ports.sqs={sqs}", *sets,
                     files=files)
    lint(objects)
    workdir.mkdir()
    config = workdir / "sluice.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in properties(objects).items()))
    c = container(one(objects, "Deployment"))
    env = pod_env(c, {"metadata.name": f"sluice-7d9f-{workdir.name}",
                      "metadata.namespace": "default", "status.podIP": pod_ip})
    data = workdir / "data"
    data.mkdir()
    cmd = [sluice_binary()]
    for a in c["args"]:
        flag = a.split("=", 1)[0]
        if flag == "--data-dir":
            a = f"--data-dir={data}"
        elif flag == "--config":
            a = f"--config={config}"
        elif flag in ("--kafka", "--http", "--sqs"):
            a = a.replace("0.0.0.0", "127.0.0.1")  # the test binds loopback only
        cmd.append(re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a))
    pod = Sluice(env=env, rerun=False)
    try:
        pod._launch(cmd, 60)
    except BaseException:
        pod.close()
        raise
    return pod, objects


OWNS_QUEUES = "this gateway owns the SQS queues now"


def test_the_charts_upstream_command_line_serves_the_kafka_proxy_and_sqs(renderer, tmp_path):
    """The upstream mode's pod, started as Kubernetes would start it, over a native sluice
    playing the cluster: a Kafka client produces through the proxy's bootstrap and node port,
    the records are in the cluster, and a boto3 SQS call is answered by the same process, which
    joined the SQS fleet under the address the chart gave it."""
    up = NativeUpstream().start()
    pod = None
    try:
        # kafka, node 0 (the native sluice's node.id), http, sqs: consecutive free ports.
        base = free_port_block(4)
        # A pod IP other than the listeners' 127.0.0.1: the fleet URL in the log can then only
        # come from the chart's variable (unset, sluice takes the listener's address). Nothing
        # connects to it: a fleet of one owns the queues itself.
        pod, objects = start_chart_pod(renderer, tmp_path / "pod", up,
                                       (base, base + 2, base + 3), "127.0.0.2",
                                       sets=("kafka.advertisedHost=127.0.0.1",
                                             "upstream.brokerIds={0}"))
        assert pod.env["SLUICE_SQS_FLEET_URL"] == f"http://127.0.0.2:{base + 3}"
        assert (pod.kafka_port, pod.http_port, pod.sqs_port) == (base, base + 2, base + 3)
        pod.wait_log(f"SQS fleet: this gateway (http://127.0.0.2:{base + 3}) joined", 30)

        # Kafka through the proxy: metadata names the node port, records land in the cluster.
        admin = AdminClient({"bootstrap.servers": up.bootstrap})
        admin.create_topics([NewTopic("chart-orders", 2, 1)])["chart-orders"].result(30)
        proxied = AdminClient({"bootstrap.servers": f"127.0.0.1:{base}"})
        md = proxied.list_topics(timeout=30)
        assert {f"{b.host}:{b.port}" for b in md.brokers.values()} == {f"127.0.0.1:{base + 1}"}
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{base}", "enable.idempotence": True})
        delivered = []
        for i in range(10):
            producer.produce("chart-orders", f"order-{i}".encode(), key=str(i).encode(),
                             on_delivery=lambda err, msg: delivered.append(err))
        assert producer.flush(30) == 0
        assert delivered == [None] * 10
        consumer = Consumer({"bootstrap.servers": up.bootstrap, "group.id": "chart-check",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        try:
            consumer.subscribe(["chart-orders"])
            seen = set()
            deadline = time.monotonic() + 30
            while len(seen) < 10 and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and not msg.error():
                    seen.add(msg.value().decode())
            assert seen == {f"order-{i}" for i in range(10)}
        finally:
            consumer.close()

        # SQS on the same process: it owns the queues (a fleet of one) and answers.
        pod.wait_log(OWNS_QUEUES, 60)
        sqs = sqs_client(pod)
        url = sqs.create_queue(QueueName="chart-jobs")["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="job-1")
        got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=10)["Messages"]
        assert [m["Body"] for m in got] == ["job-1"]
        sqs.delete_message(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"])
        with urllib.request.urlopen(f"http://127.0.0.1:{base + 2}/readyz", timeout=10) as r:
            assert r.status == 200
        assert pod.stop() == 0
    finally:
        if pod is not None:
            pod.close()
        up.close()


def metadata_brokers(sock, correlation_id=11):
    """Metadata v1 for no topic: the brokers, [(node id, host, port)]."""
    sock.sendall(kafka_request(3, 1, correlation_id, struct.pack(">i", 0)))
    body = read_frame(sock)
    assert struct.unpack(">i", body[:4])[0] == correlation_id
    count, = struct.unpack(">i", body[4:8])
    at, brokers = 8, []
    for _ in range(count):
        node, size = struct.unpack(">ih", body[at:at + 6])
        host = body[at + 6:at + 6 + size].decode()
        at += 6 + size
        port, rack = struct.unpack(">ih", body[at:at + 6])
        at += 6 + max(rack, 0)
        brokers.append((node, host, port))
    return brokers


def test_the_charts_sni_layout_serves_every_broker_on_the_one_tls_port(renderer, tmp_path):
    """kafka.protocol=SSL and proxy.sniHostPattern, the chart's command line and properties
    file (the pattern there, where Kubernetes expands no $(...)): Metadata on the bootstrap
    names upstream broker 0 as the pattern's name on the one port, a TLS connection naming it
    (SNI) is served, and one naming a broker the cluster does not have is closed."""
    (tmp_path / "pki").mkdir()
    pki = Pki(tmp_path / "pki", names=("*.kafka.test",))
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"config": {
        "ssl.certificate.location": pki.path("server.pem"),
        "ssl.key.location": pki.path("server.key")}}))
    up = NativeUpstream().start()
    pod = None
    try:
        base = free_port_block(2)
        pod, _ = start_chart_pod(renderer, tmp_path / "pod", up, (base, base + 1, 0), "127.0.0.1",
                                 sets=("kafka.protocol=SSL", "kafka.advertisedHost=localhost",
                                       "proxy.sniHostPattern=broker-$(nodeId).kafka.test"),
                                 files=(values,))
        ctx = client_context(pki)
        with tls_connect(base, ctx) as sock:  # server name localhost: the bootstrap
            assert metadata_brokers(sock) == [(0, "broker-0.kafka.test", base)]
        raw = socket.create_connection(("127.0.0.1", base), timeout=10)
        with ctx.wrap_socket(raw, server_hostname="broker-0.kafka.test") as sock:
            assert api_versions_ok(sock)
            assert metadata_brokers(sock) == [(0, "broker-0.kafka.test", base)]
        raw = socket.create_connection(("127.0.0.1", base), timeout=10)
        with ctx.wrap_socket(raw, server_hostname="broker-7.kafka.test") as sock:
            assert tls_closed(sock)
    finally:
        if pod is not None:
            pod.close()
        up.close()


def test_a_pod_stopped_by_kubernetes_hands_the_sqs_queues_over_without_the_session_timeout(
        renderer, tmp_path):
    """Two pods of the chart's fleet (SQS only); the one that owns the queues gets SIGTERM, as
    Kubernetes sends it. With a session timeout of 300 s only a clean leave of the owner group
    can let the other pod own the queues within the wait below; it then serves the message sent
    before, and the stopped pod exits 0 (within the chart's grace period)."""
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"config": {"sqs.fleet.session.timeout.ms": "300000"}}))
    up = NativeUpstream().start()
    pods = []
    try:
        base = free_port_block(4)
        for i in range(2):
            pod, objects = start_chart_pod(renderer, tmp_path / f"pod{i}", up,
                                           (0, base + 2 * i, base + 2 * i + 1), "127.0.0.1",
                                           files=(values,))
            pods.append(pod)
            if i == 0:
                pod.wait_log(OWNS_QUEUES, 60)
        first, second = pods
        grace = one(objects, "Deployment")["spec"]["template"]["spec"][
            "terminationGracePeriodSeconds"]
        # Through the pod that does not own the queues: forwarded to the owner's fleet URL.
        sqs = sqs_client(second)
        url = sqs.create_queue(QueueName="chart-handover")["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="held")
        assert second._find_line(OWNS_QUEUES) is None
        assert first.stop(timeout=grace) == 0
        second.wait_log(OWNS_QUEUES, 60)
        got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=10)["Messages"]
        assert [m["Body"] for m in got] == ["held"]
    finally:
        for pod in pods:
            pod.close()
        up.close()


def test_pods_get_no_service_link_variables_and_sluice_survives_them(renderer):
    """Kubernetes puts FOO_SERVICE_HOST, FOO_PORT, FOO_PORT_9092_TCP_ADDR... into a pod for every
    Service of its namespace; `helm install sluice` makes a Service named sluice. The chart turns
    service links off, and sluice started with such variables anyway (a pod spec of its own, an
    older chart) logs one warning and serves."""
    for mode in ([], UPSTREAM):
        objects = render(renderer, *mode, name="sluice")
        for w in by_kind(objects, "StatefulSet") + by_kind(objects, "Deployment"):
            assert w["spec"]["template"]["spec"]["enableServiceLinks"] is False
    links = {"SLUICE_PORT": "tcp://10.96.0.12:9092", "SLUICE_SERVICE_HOST": "10.96.0.12",
             "SLUICE_SERVICE_PORT": "9092", "SLUICE_SERVICE_PORT_KAFKA": "9092",
             "SLUICE_PORT_9092_TCP": "tcp://10.96.0.12:9092",
             "SLUICE_PORT_9092_TCP_ADDR": "10.96.0.12", "SLUICE_PORT_9092_TCP_PORT": "9092",
             "SLUICE_PORT_9092_TCP_PROTO": "tcp"}
    s = Sluice(env=links).start()
    try:
        warnings = [l for l in s.log_lines if "SLUICE_PORT_9092_TCP_ADDR" in l]
        assert len(warnings) == 1, s.log_text()
        assert " warning [server] " in warnings[0]
        for name in links:
            assert name in warnings[0]
        admin = AdminClient({"bootstrap.servers": s.bootstrap})
        assert admin.list_topics(timeout=10).brokers
    finally:
        s.close()
