package e2e

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// installedEnv turns TestInstalledController on. It replaces the local
// cluster's controller with the one berth.yaml installs and uninstalls it at
// the end, so hack/e2e.sh runs it alone, after every other test.
const installedEnv = "BERTH_E2E_INSTALLED"

// TestInstalledController installs the release's berth.yaml and runs the
// controller as its Deployment would, then runs the core stories against
// it. kwok cannot run containers, so the test is the kubelet: it takes the
// berth binary out of the release's OCI image, unpacks the image into a
// root file system, mounts into it what the pod spec mounts (the
// ConfigMap, the emptyDir of certificates, the ServiceAccount's token and
// CA from a TokenRequest), makes it read-only, and runs the entrypoint
// with the container's args as uid 65532, in a mount namespace of its own,
// with the in-cluster environment. The controller then has exactly the
// permissions berth.yaml grants: any it lacks shows as a forbidden in its
// log, and the test fails on any.
func TestInstalledController(t *testing.T) {
	if os.Getenv(installedEnv) == "" {
		t.Skipf("it replaces the local controller with the installed one: hack/e2e.sh runs it last, with %s=1", installedEnv)
	}
	release := filepath.Join(root, "_output", "release")
	manifest, err := os.ReadFile(filepath.Join(release, "berth.yaml"))
	if err != nil {
		t.Fatalf("%v: run make release (make test does)", err)
	}
	deployment := deploymentOf(t, manifest)
	ctx := t.Context()

	stopLocalController(t)
	// The local cluster calls the local controller by URL; the install
	// calls it through its Service.
	mustKubectl(t, "", "delete", "mutatingwebhookconfiguration,validatingwebhookconfiguration",
		"berth-mutating-webhook-configuration", "berth-validating-webhook-configuration", "--ignore-not-found")
	mustKubectl(t, "", "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(release, "berth.yaml"))
	mustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=60s", "crd/workloads.berth.dev", "crd/clusterqueues.berth.dev")
	// kwok would only pretend to run the Deployment's pods: the test runs
	// the controller itself, so the Deployment has none, and the Service
	// reaches the test's process through an EndpointSlice of its own (the
	// local API server routes to endpoints, as a cluster without
	// kube-proxy in its control plane's network must).
	mustKubectl(t, "", "scale", "deployment", deployment.Name, "-n", deployment.Namespace, "--replicas=0")
	apply(t, webhookEndpoints(t, deployment.Namespace))

	enableOptIn(t, deployment)
	proc := runAsDeployed(t, release, deployment, "installed")
	if err := proc.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.stop)
	if err := proc.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	crashAndRestart = proc.crashAndRestart
	t.Cleanup(func() { crashAndRestart = crashLocalController })

	t.Run("metrics need a reader's token", checkMetricsAuth)
	for _, story := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"admission", TestQuotaAndWaiting},
		{"borrowing and reclaim", TestBorrowingAndReclaim},
		{"priority preemption", TestPriorityPreemption},
		{"a Deployment", TestInferenceBorrowsTrainingsGPUs},
		{"a pod group", TestStatefulSetAdmittedAsOneGroup},
		{"an admission check", TestCapacityFromTheCloud},
		{"owners cannot escape", TestEscapeMatrix},
	} {
		if !t.Run(story.name, story.run) {
			break
		}
	}

	// RBAC's refusals; not the API server's others, such as a namespace
	// that is being deleted taking no new objects.
	if forbidden := proc.grep(`forbidden: user "`); len(forbidden) > 0 {
		t.Errorf("the installed controller was refused %d times; berth.yaml lacks permissions its code uses:\n%s",
			len(forbidden), strings.Join(forbidden, "\n"))
	}
	if t.Failed() {
		t.Logf("the installed controller's log: %s", proc.logFile)
		return
	}
	var next *installed
	t.Run("an upgrade keeps what was admitted", func(t *testing.T) { next = checkUpgrade(t, proc) })
	if next != nil {
		// After the namespaces' cleanups: while no controller serves the
		// webhooks, nothing may update the pods Berth manages, the Job
		// controller's removal of its finalizer included.
		t.Cleanup(next.stop)
	}
	if next == nil || t.Failed() {
		return
	}
	uninstall(ctx, t, release)
	next.stop()
}

// checkUpgrade applies the next release's berth.yaml over the running
// install (hack/e2e.sh builds it from the same tree with another version,
// so the image's digest differs) and replaces the controller with the one
// of its image, as a rollout would. The workloads admitted before keep
// their admission, without an eviction or a second admission, their pods
// keep running, and a job submitted while the controller changes is
// admitted within 25 seconds.
func checkUpgrade(t *testing.T, old *installed) *installed {
	nextRelease := filepath.Join(root, "_output", "release-next")
	manifest, err := os.ReadFile(filepath.Join(nextRelease, "berth.yaml"))
	if err != nil {
		t.Fatalf("%v: hack/e2e.sh builds the next release", err)
	}
	e := newEnv(t)
	q := e.queue("upgrade", "", gpuQuota{flavor: e.flavor("h100"), gpus: "12"})
	e.localQueue("main", q)
	jobs := []string{"first", "second"}
	before := map[string]string{}
	for _, j := range jobs {
		e.job(j, "main", "", 1, 4, "")
	}
	for _, j := range jobs {
		e.waitCondition(j, "Admitted", "True", "")
		e.running(j, 1)
	}
	// What must not change: the admission, when quota was reserved, and the
	// pods that run.
	state := func(j string) string {
		wl := e.workload(t.Context(), j)
		return get(t.Context(), "wl", wl, "-n", e.ns, "-o", `jsonpath={.metadata.uid} {.status.admission} {.status.conditions[?(@.type=="QuotaReserved")].lastTransitionTime} {.status.conditions[?(@.type=="Evicted")].status}`) +
			" pods " + get(t.Context(), "pods", "-n", e.ns, "-l", "job-name="+j, "-o", "jsonpath={.items[*].metadata.uid}")
	}
	for _, j := range jobs {
		before[j] = state(j)
	}

	mustKubectl(t, "", "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(nextRelease, "berth.yaml"))
	d := deploymentOf(t, manifest)
	if d.Spec.Template.Spec.Containers[0].Image == "" || strings.Contains(get(t.Context(), "deployment", d.Name, "-n", d.Namespace, "-o", "jsonpath={.spec.template.spec.containers[0].image}"), "v0.0.0-dev") {
		t.Fatalf("the Deployment still names the old image after the upgrade's apply")
	}
	mustKubectl(t, "", "scale", "deployment", d.Name, "-n", d.Namespace, "--replicas=0")
	next := runAsDeployed(t, nextRelease, d, "installed-next")
	// The rollout: the old pod is told to stop, the new one starts.
	stopped := time.Now()
	old.stop()
	if err := next.start(); err != nil {
		t.Fatal(err)
	}
	crashAndRestart = next.crashAndRestart
	// Submitted while no controller serves the webhooks (with one process
	// there is no second replica to serve them): the API server refuses the
	// job until the new one does, so the user retries.
	eventually(t, "job third to be accepted", time.Minute, func(ctx context.Context) error {
		_, err := kubectl(ctx, jobManifest(e.ns, "third", "main", "", 1, 4, ""), "apply", "-f", "-")
		return err
	})
	if err := next.waitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.waitCondition("third", "Admitted", "True", "")
	// One process here, so the new leader waits out the old one's Lease
	// (15s; the leader does not give it up, see operations.md) and starts:
	// 25s at most.
	if pause := time.Since(stopped); pause > 25*time.Second {
		t.Errorf("a job submitted during the upgrade was admitted %s after the old controller stopped, want at most 25s", pause.Round(time.Second))
	} else {
		t.Logf("a job submitted during the upgrade was admitted %s after the old controller stopped", pause.Round(100*time.Millisecond))
	}
	if !strings.Contains(next.tail(), "v0.0.1") && len(next.grep(`"version":"v0.0.1`)) == 0 {
		t.Errorf("the new controller is not the next release's")
	}
	for _, j := range jobs {
		if after := state(j); after != before[j] {
			t.Errorf("job %s changed in the upgrade:\nbefore %s\nafter  %s", j, before[j], after)
		}
	}
	return next
}

// deploymentOf is the controller's Deployment in a manifest.
func deploymentOf(t *testing.T, manifest []byte) *appsv1.Deployment {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(manifest)), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if u.GetKind() != "Deployment" || u.GetName() != "berth-controller" {
			continue
		}
		var d appsv1.Deployment
		if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
			t.Fatal(err)
		}
		return &d
	}
	t.Fatal("berth.yaml has no Deployment berth-controller")
	return nil
}

func mustKubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectl(t.Context(), stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// stopLocalController stops the local cluster's controller process.
func stopLocalController(t *testing.T) {
	t.Helper()
	pid := controllerPID(t)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatal(err)
	}
	eventually(t, "the local controller to stop", time.Minute, func(context.Context) error {
		if syscall.Kill(pid, 0) == nil {
			return fmt.Errorf("pid %d still runs", pid)
		}
		return nil
	})
}

// webhookEndpoints is an EndpointSlice of the webhook Service that points
// at this machine's address, where the test's controller listens.
func webhookEndpoints(t *testing.T, namespace string) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var ip string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			ip = n.IP.String()
			break
		}
	}
	if ip == "" {
		t.Fatal("this machine has no address but loopback, which an EndpointSlice may not name")
	}
	return fmt.Sprintf(`apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: berth-webhook-service-e2e
  namespace: %s
  labels:
    kubernetes.io/service-name: berth-webhook-service
    endpointslice.kubernetes.io/managed-by: e2e.berth.dev
addressType: IPv4
endpoints:
- addresses: [%q]
  conditions: {ready: true}
ports:
- {name: webhook, port: 9443, protocol: TCP}
`, namespace, ip)
}

// installed is the controller process the test runs.
type installed struct {
	script  string
	env     []string
	logFile string
	cmd     *exec.Cmd
	done    chan struct{}
}

// start starts the controller, its log appended to logFile.
func (p *installed) start() error {
	log, err := os.OpenFile(p.logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", p.script)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

// waitReady waits until the controller is ready and serves the webhooks.
func (p *installed) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		if p.exited() {
			return fmt.Errorf("the installed controller exited:\n%s", p.tail())
		}
		err := httpOK(ctx, "http://127.0.0.1:8081/readyz")
		if err == nil {
			_, err = kubectl(ctx, jobManifest("default", "probe", "probe", "", 1, 1, ""), "create", "--dry-run=server", "-f", "-")
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the installed controller is not ready: %w", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// crashAndRestart kills the controller with SIGKILL and starts it again.
func (p *installed) crashAndRestart() error {
	if err := p.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("killing the installed controller: %w", err)
	}
	<-p.done
	if err := p.start(); err != nil {
		return err
	}
	return p.waitReady(context.Background())
}

func (p *installed) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *installed) stop() {
	if !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

func (p *installed) tail() string {
	lines := p.grep("")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// grep is the log's lines that contain s, case ignored.
func (p *installed) grep(s string) []string {
	f, err := os.Open(p.logFile)
	if err != nil {
		return []string{err.Error()}
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(strings.ToLower(sc.Text()), s) {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}

// runAsDeployed runs the controller as the kubelet would run the
// Deployment's container.
func runAsDeployed(t *testing.T, release string, d *appsv1.Deployment, name string) *installed {
	t.Helper()
	dir := filepath.Join(root, "_output", "local", name)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	rootfs := filepath.Join(dir, "rootfs")
	c := d.Spec.Template.Spec.Containers[0]
	unpackImage(t, filepath.Join(release, "images", "berth"), rootfs)
	if len(c.Command) > 0 {
		t.Fatalf("the container overrides the image's entrypoint with %v; the test runs the image's", c.Command)
	}

	// Each volume the container mounts, made as the kubelet makes it.
	var mounts []string // pairs: source, target in rootfs
	volumes := map[string]corev1.Volume{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			t.Fatalf("mount %s names no volume", m.Name)
		}
		src := filepath.Join(dir, "volumes", m.Name)
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case v.ConfigMap != nil:
			for key, value := range configMapData(t, d.Namespace, v.ConfigMap.Name) {
				if err := os.WriteFile(filepath.Join(src, key), []byte(value), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		case v.EmptyDir != nil:
			// fsGroup-less emptyDirs are world-writable.
			if err := os.Chmod(src, 0o777); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("volume %s is of a kind the test does not make", m.Name)
		}
		mounts = append(mounts, src, m.MountPath)
	}
	// The ServiceAccount's projected token, CA and namespace.
	sa := filepath.Join(dir, "volumes", "serviceaccount")
	if err := os.MkdirAll(sa, 0o755); err != nil {
		t.Fatal(err)
	}
	token := mustKubectl(t, "", "create", "token", d.Spec.Template.Spec.ServiceAccountName, "-n", d.Namespace, "--duration=2h")
	ca, err := base64.StdEncoding.DecodeString(mustKubectl(t, "", "config", "view", "--raw", "--minify", "--flatten",
		"-o", "jsonpath={.clusters[0].cluster.certificate-authority-data}"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"token": strings.TrimSpace(token), "ca.crt": string(ca), "namespace": d.Namespace} {
		if err := os.WriteFile(filepath.Join(sa, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mounts = append(mounts, sa, "/var/run/secrets/kubernetes.io/serviceaccount")
	server, err := url.Parse(mustKubectl(t, "", "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"))
	if err != nil {
		t.Fatal(err)
	}

	// Inside a mount namespace of its own: the mounts, /proc and /dev as a
	// runtime gives them, the root made read-only (the container's
	// readOnlyRootFilesystem), then the entrypoint as the image's user.
	var script strings.Builder
	script.WriteString("set -e\n")
	fmt.Fprintf(&script, "mount --bind %q %q\n", rootfs, rootfs)
	for _, target := range []string{"/proc", "/dev"} {
		fmt.Fprintf(&script, "mkdir -p %q && mount --rbind %q %q\n", rootfs+target, target, rootfs+target)
	}
	for i := 0; i < len(mounts); i += 2 {
		fmt.Fprintf(&script, "mkdir -p %q && mount --bind %q %q\n", rootfs+mounts[i+1], mounts[i], rootfs+mounts[i+1])
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Error("the container's root file system is not read-only")
	}
	fmt.Fprintf(&script, "mount -o remount,bind,ro %q\n", rootfs)
	user := imageUser(t, filepath.Join(release, "images", "berth"))
	args := []string{"chroot", "--userspec=" + user, rootfs, "/berth"}
	args = append(args, c.Args...)
	script.WriteString("exec")
	for _, a := range args {
		fmt.Fprintf(&script, " %q", a)
	}
	script.WriteString("\n")

	env := []string{"KUBERNETES_SERVICE_HOST=" + server.Hostname(), "KUBERNETES_SERVICE_PORT=" + server.Port()}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory" && e.ValueFrom.ResourceFieldRef.Divisor.IsZero():
			// As the kubelet writes it: the container's limit, in bytes.
			env = append(env, fmt.Sprintf("%s=%d", e.Name, c.Resources.Limits.Memory().Value()))
		default:
			t.Fatalf("env %s comes from a source the test does not read", e.Name)
		}
	}
	return &installed{script: script.String(), env: env, logFile: filepath.Join(dir, "berth.log")}
}

// optInFrameworks are the frameworks the shipped configuration lists
// commented out, for the clusters that have their CRDs.
var optInFrameworks = []string{"ray.io/rayjob", "ray.io/raycluster", "trainer.kubeflow.org/trainjob"}

// enableOptIn does what the shipped configuration's comments tell an
// administrator with KubeRay and Kubeflow Trainer installed to do: it
// uncomments optInFrameworks in the frameworks of the Deployment's
// configuration, in the cluster, so that the stories run the Ray and
// TrainJob rows with the installed controller's RBAC.
func enableOptIn(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		data := configMapData(t, d.Namespace, v.ConfigMap.Name)
		changed := map[string]string{}
		for key, value := range data {
			on := value
			for _, f := range optInFrameworks {
				on = strings.Replace(on, "# - "+f+"\n", "- "+f+"\n", 1)
			}
			if strings.Count(on, "\n") == strings.Count(value, "\n") && len(on) == len(value)-2*len(optInFrameworks) {
				changed[key] = on
			}
		}
		if len(changed) == 0 {
			continue
		}
		patch, err := json.Marshal(map[string]any{"data": changed})
		if err != nil {
			t.Fatal(err)
		}
		mustKubectl(t, "", "patch", "configmap", v.ConfigMap.Name, "-n", d.Namespace, "--type=merge", "-p", string(patch))
		return
	}
	t.Fatalf("the Deployment's configuration offers no commented %v to enable", optInFrameworks)
}

// configMapData reads a ConfigMap's data from the cluster.
func configMapData(t *testing.T, namespace, name string) map[string]string {
	t.Helper()
	var cm corev1.ConfigMap
	decodeJSON(t, mustKubectl(t, "", "get", "configmap", name, "-n", namespace, "-o", "json"), &cm)
	return cm.Data
}

func decodeJSON(t *testing.T, s string, into any) {
	t.Helper()
	if err := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(s), 4096).Decode(into); err != nil {
		t.Fatal(err)
	}
}

// platformImage is the image of an OCI layout's index for this machine.
func platformImage(t *testing.T, dir string) (*layout.Path, int) {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == runtime.GOOS && d.Platform.Architecture == runtime.GOARCH {
			return &p, i
		}
	}
	t.Fatalf("%s has no image for %s/%s", dir, runtime.GOOS, runtime.GOARCH)
	return nil, 0
}

// unpackImage writes the file system of the layout's image for this
// machine into rootfs, owners and modes included.
func unpackImage(t *testing.T, dir, rootfs string) {
	t.Helper()
	p, i := platformImage(t, dir)
	idx, _ := p.ImageIndex()
	m, _ := idx.IndexManifest()
	img, err := idx.Image(m.Manifests[i].Digest)
	if err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(rootfs, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, os.FileMode(h.Mode).Perm()); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(target, data, os.FileMode(h.Mode).Perm()); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("the image holds %s of type %c, which the test does not unpack", h.Name, h.Typeflag)
		}
		// Mode again: MkdirAll and WriteFile are subject to the umask, and
		// sticky bits are not in Perm.
		if err := os.Chmod(target, os.FileMode(h.Mode&0o777)|stickyOf(h.Mode)); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
			t.Fatal(err)
		}
	}
}

func stickyOf(mode int64) os.FileMode {
	if mode&0o1000 != 0 {
		return os.ModeSticky
	}
	return 0
}

// imageUser is the user the layout's image runs as.
func imageUser(t *testing.T, dir string) string {
	t.Helper()
	p, i := platformImage(t, dir)
	idx, _ := p.ImageIndex()
	m, _ := idx.IndexManifest()
	img, err := idx.Image(m.Manifests[i].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User == "" || strings.HasPrefix(cf.Config.User, "0") || strings.HasPrefix(cf.Config.User, "root") {
		t.Fatalf("the image runs as %q, want a user other than root", cf.Config.User)
	}
	return cf.Config.User
}

func httpOK(ctx context.Context, u string) error {
	return httpStatus(ctx, u, "", http.StatusOK)
}

// httpStatus fails unless a GET of u with the bearer token answers want.
func httpStatus(ctx context.Context, u, token string, want int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// The metrics certificate is the controller's own, self-signed.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // see above
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		return fmt.Errorf("GET %s: %s, want %d", u, resp.Status, want)
	}
	return nil
}

// checkMetricsAuth: the metrics endpoint answers HTTPS only to callers the
// ClusterRole berth-metrics-reader binds.
func checkMetricsAuth(t *testing.T) {
	e := newEnv(t)
	for _, sa := range []string{"scraper", "stranger"} {
		mustKubectl(t, "", "create", "serviceaccount", sa, "-n", e.ns)
	}
	binding := e.name("scraper")
	e.clusterScoped("clusterrolebinding", binding, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: berth-metrics-reader}
subjects: [{kind: ServiceAccount, name: scraper, namespace: %s}]
`, binding, e.ns))
	scraper := strings.TrimSpace(mustKubectl(t, "", "create", "token", "scraper", "-n", e.ns))
	stranger := strings.TrimSpace(mustKubectl(t, "", "create", "token", "stranger", "-n", e.ns))
	const metrics = "https://127.0.0.1:8443/metrics"
	for _, c := range []struct {
		who, token string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a ServiceAccount without the role", stranger, http.StatusForbidden},
		{"a ServiceAccount bound to berth-metrics-reader", scraper, http.StatusOK},
	} {
		eventually(t, "metrics for "+c.who, 30*time.Second, func(ctx context.Context) error {
			return httpStatus(ctx, metrics, c.token, c.want)
		})
	}
	if err := httpStatus(t.Context(), strings.Replace(metrics, "https:", "http:", 1), "", http.StatusOK); err == nil {
		t.Error("metrics are served over plain HTTP too")
	}
}

// uninstall removes what the stories made while the controller runs (its
// finalizers go with it), then everything berth.yaml made, and checks that
// nothing of it is left.
func uninstall(ctx context.Context, t *testing.T, release string) {
	t.Helper()
	manifest := filepath.Join(release, "berth.yaml")
	mustKubectl(t, "", "delete", "localqueues,clusterqueues,resourceflavors,cohorts,admissionchecks,workloadpriorityclasses,provisioningrequestconfigs",
		"--all", "-A", "--timeout=2m")
	mustKubectl(t, "", "delete", "-f", manifest, "--timeout=3m")
	out, err := kubectl(ctx, "", "get", "-f", manifest, "--ignore-not-found", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	if left := strings.TrimSpace(out); left != "" {
		t.Errorf("kubectl delete -f berth.yaml left:\n%s", left)
	}
}
