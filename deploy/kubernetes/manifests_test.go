package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// manifest is one file's objects, decoded strictly.
type manifest struct {
	statefulSets []appsv1.StatefulSet
	services     []corev1.Service
	configMaps   []corev1.ConfigMap
	budgets      []policyv1.PodDisruptionBudget
}

// decode reads every document of path into its API type, refusing a
// field the type does not have (a typo is an error, not ignored).
func decode(t *testing.T, path string) manifest {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("%s, document %d: %v", path, i, err)
		}
		if tm.Kind == "" {
			continue // comments only
		}
		var into any
		switch tm.APIVersion + " " + tm.Kind {
		case "apps/v1 StatefulSet":
			m.statefulSets = append(m.statefulSets, appsv1.StatefulSet{})
			into = &m.statefulSets[len(m.statefulSets)-1]
		case "v1 Service":
			m.services = append(m.services, corev1.Service{})
			into = &m.services[len(m.services)-1]
		case "v1 ConfigMap":
			m.configMaps = append(m.configMaps, corev1.ConfigMap{})
			into = &m.configMaps[len(m.configMaps)-1]
		case "policy/v1 PodDisruptionBudget":
			m.budgets = append(m.budgets, policyv1.PodDisruptionBudget{})
			into = &m.budgets[len(m.budgets)-1]
		default:
			t.Fatalf("%s, document %d: %s %s is not a kind this test knows", path, i, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			t.Fatalf("%s, document %d (%s): %v", path, i, tm.Kind, err)
		}
	}
	return m
}

// TestManifests: each file decodes strictly, and its StatefulSet is one
// shardd can run safely: the worker ID is the pod's name, Consul is the
// node's agent, the readiness probe asks /readyz on shardd's --http port,
// the grace period covers --drain-timeout and 10 s to release, the
// StatefulSet rolls one pod at a time and a budget allows one voluntary
// disruption, the Service selects its pods, and every $(VAR) of the
// command line is defined.
func TestManifests(t *testing.T) {
	cms := map[string]corev1.ConfigMap{}
	files := map[string]manifest{}
	for _, path := range []string{"shardd-worker.yaml", "shardd-run.yaml"} {
		m := decode(t, path)
		files[path] = m
		for _, cm := range m.configMaps {
			cms[cm.Name] = cm
		}
	}
	for path, m := range files {
		t.Run(path, func(t *testing.T) {
			if len(m.statefulSets) != 1 || len(m.budgets) != 1 || len(m.services) != 1 {
				t.Fatalf("%d StatefulSets, %d PodDisruptionBudgets, %d Services; want one of each", len(m.statefulSets), len(m.budgets), len(m.services))
			}
			ss := m.statefulSets[0]
			checkStatefulSet(t, ss, cms)
			labels := ss.Spec.Template.Labels
			if sel := m.services[0].Spec.Selector; !subset(sel, labels) || m.services[0].Spec.ClusterIP != corev1.ClusterIPNone || ss.Spec.ServiceName != m.services[0].Name {
				t.Errorf("Service %s (selector %v, clusterIP %q) is not the StatefulSet's headless service over labels %v", m.services[0].Name, sel, m.services[0].Spec.ClusterIP, labels)
			}
			pdb := m.budgets[0]
			if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || !subset(pdb.Spec.Selector.MatchLabels, labels) {
				t.Errorf("PodDisruptionBudget %s: maxUnavailable %v over %v, want 1 over the StatefulSet's pods %v", pdb.Name, pdb.Spec.MaxUnavailable, pdb.Spec.Selector.MatchLabels, labels)
			}
		})
	}
}

func checkStatefulSet(t *testing.T, ss appsv1.StatefulSet, cms map[string]corev1.ConfigMap) {
	t.Helper()
	if ss.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		t.Errorf("update strategy %q, want RollingUpdate (one pod at a time, each waiting for the last to be ready)", ss.Spec.UpdateStrategy.Type)
	}
	if len(ss.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want shardd alone", len(ss.Spec.Template.Spec.Containers))
	}
	c := ss.Spec.Template.Spec.Containers[0]
	flags := flagValues(c.Args)
	if c.Args[0] != "worker" && c.Args[0] != "run" {
		t.Errorf("args %q: want shardd worker or shardd run", c.Args)
	}
	if flags["--id"] != "$(POD_NAME)" || fieldRef(c, "POD_NAME") != "metadata.name" {
		t.Errorf("--id %q with POD_NAME from %q: want the pod's name, stable across restarts", flags["--id"], fieldRef(c, "POD_NAME"))
	}
	if v := envValue(c, "CONSUL_HTTP_ADDR"); !strings.HasPrefix(v, "$(HOST_IP):") || fieldRef(c, "HOST_IP") != "status.hostIP" {
		t.Errorf("CONSUL_HTTP_ADDR %q, HOST_IP from %q: want the node's agent", v, fieldRef(c, "HOST_IP"))
	}
	drain, err := time.ParseDuration(flags["--drain-timeout"])
	if v, ok := flags["--drain-before-stop"]; ok && err == nil { // a drain before the stop comes first
		var first time.Duration
		first, err = time.ParseDuration(v)
		drain += first
	}
	grace := ss.Spec.Template.Spec.TerminationGracePeriodSeconds
	if err != nil || grace == nil || time.Duration(*grace)*time.Second < drain+10*time.Second {
		t.Errorf("terminationGracePeriodSeconds %s with --drain-timeout %q and --drain-before-stop %q: want at least both and 10 s to release", orUnset(grace), flags["--drain-timeout"], flags["--drain-before-stop"])
	}
	_, port, _ := strings.Cut(flags["--http"], ":")
	p := c.ReadinessProbe
	if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || namedPort(c, p.HTTPGet.Port.String()) != port {
		t.Errorf("readiness probe %+v: want GET /readyz on shardd's --http port %s", p, port)
	}
	if c.LivenessProbe != nil {
		t.Errorf("a liveness probe would kill a worker the lease still tolerates; the lease is the liveness")
	}
	if off := flags["--offsets"]; off == "memory" || off == "bolt" {
		t.Errorf("--offsets %s: a store private to one process loses progress when a shard moves", off)
	}
	defined := map[string]bool{}
	for _, e := range c.Env {
		defined[e.Name] = true
	}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef == nil {
			continue
		}
		cm, ok := cms[ef.ConfigMapRef.Name]
		if !ok {
			t.Errorf("envFrom ConfigMap %q is in neither manifest", ef.ConfigMapRef.Name)
		}
		for k := range cm.Data {
			defined[k] = true
		}
	}
	for _, a := range slices.Concat(c.Args, c.Command) {
		for _, m := range regexp.MustCompile(`\$\((\w+)\)`).FindAllStringSubmatch(a, -1) {
			if !defined[m[1]] {
				t.Errorf("%q uses $(%s), which the container's environment does not define", a, m[1])
			}
		}
	}
}

// TestShardAcceptsTheArgs: the StatefulSets' command lines, their $(VAR)s
// filled in as Kubernetes would, get past the flags of a shardd built
// from this tree (it exits 2 on a flag it does not know).
func TestShardAcceptsTheArgs(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "shardd")
	build := exec.Command("go", "build", "-o", bin, "./cmd/shardd")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building shardd: %v\n%s", err, out)
	}
	vals := map[string]string{"POD_NAME": "w-0", "HOST_IP": "127.0.0.1", "SHARDLEASE_PREFIX": "shardlease/orders", "SHARDLEASE_SHARDS": "128",
		"SHARDLEASE_OFFSETS": "postgres://shardlease@127.0.0.1:1/orders"}
	for _, path := range []string{"shardd-worker.yaml", "shardd-run.yaml"} {
		t.Run(path, func(t *testing.T) {
			c := decode(t, path).statefulSets[0].Spec.Template.Spec.Containers[0]
			var argv []string
			for _, a := range c.Args {
				argv = append(argv, regexp.MustCompile(`\$\((\w+)\)`).ReplaceAllStringFunc(a, func(v string) string { return vals[v[2:len(v)-1]] }))
			}
			argv = slices.DeleteFunc(argv, func(a string) bool { return a == "/usr/local/bin/my-consumer" })
			if argv[len(argv)-1] == "--" {
				argv = append(argv, "/bin/sleep", "30")
			}
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, argv...)
			cmd.Env = append(os.Environ(), "CONSUL_HTTP_ADDR=127.0.0.1:1") // nothing listens: shardd gets past its flags, then waits
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == 2 {
				t.Errorf("shardd refused %q:\n%s", argv, out)
			}
		})
	}
}

// flagValues maps each --name=value argument to its value.
func flagValues(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "--") {
			out[k] = v
		}
	}
	return out
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func fieldRef(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			return e.ValueFrom.FieldRef.FieldPath
		}
	}
	return ""
}

// namedPort is the container port a probe's port names (a name or a
// number), as a string.
func namedPort(c corev1.Container, port string) string {
	for _, p := range c.Ports {
		if p.Name == port {
			return fmt.Sprint(p.ContainerPort)
		}
	}
	return port
}

func subset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func orUnset(p *int64) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}
