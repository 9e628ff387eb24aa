// chart_render renders a Helm chart the way `helm template` does, without a cluster and without
// helm (which Debian does not package): Go's text/template with sprig's functions and Helm's
// own (include, tpl, toYaml, fromYaml, toJson, required, fail), values merged from values.yaml,
// -f files and --set pairs ({a,b} a list, as in helm). It prints the rendered objects as one
// YAML stream, each preceded by a "# Source:" comment, and exits non-zero with the template's
// message when rendering fails.
//
// Usage: chart_render CHART_DIR [--name RELEASE] [--namespace NS] [-f VALUES.yaml]... [--set K=V]...
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	"gopkg.in/yaml.v3"
)

type values = map[string]interface{}

func readYAML(path string) (values, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := values{}
	if err := yaml.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// merge copies src over dst, descending into maps present in both.
func merge(dst, src values) values {
	for k, v := range src {
		if sm, ok := v.(map[string]interface{}); ok {
			if dm, ok := dst[k].(map[string]interface{}); ok {
				dst[k] = merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

// scalar types one --set value as helm does: numbers and booleans typed, the rest strings.
func scalar(raw string) interface{} {
	if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
		return int(n)
	} else if raw == "true" || raw == "false" {
		return raw == "true"
	} else if raw == "null" {
		return nil
	}
	return raw
}

// setValue applies one --set a.b.c=value; {x,y} is a list, as in helm.
func setValue(v values, pair string) error {
	eq := strings.IndexByte(pair, '=')
	if eq < 0 {
		return fmt.Errorf("--set %s: expected KEY=VALUE", pair)
	}
	path := strings.Split(pair[:eq], ".")
	raw := pair[eq+1:]
	value := scalar(raw)
	if strings.HasPrefix(raw, "{") && strings.HasSuffix(raw, "}") {
		list := []interface{}{}
		if inner := raw[1 : len(raw)-1]; inner != "" {
			for _, item := range strings.Split(inner, ",") {
				list = append(list, scalar(item))
			}
		}
		value = list
	}
	m := v
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]interface{})
		if !ok {
			next = values{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = value
	return nil
}

func toYAML(v interface{}) string {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

type capabilities struct{ apis map[string]bool }

func (c capabilities) Has(api string) bool { return c.apis[api] }

type failure struct{ msg string }

func (f failure) Error() string { return f.msg }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: chart_render CHART_DIR [--name R] [--namespace NS] [-f FILE]... [--set K=V]...")
		os.Exit(2)
	}
	chartDir := os.Args[1]
	release, namespace := "sluice", "default"
	var files, sets []string
	args := os.Args[2:]
	for i := 0; i < len(args); i++ {
		need := func() string {
			if i+1 >= len(args) {
				fmt.Fprintf(os.Stderr, "%s: missing value\n", args[i])
				os.Exit(2)
			}
			i++
			return args[i]
		}
		switch args[i] {
		case "--name":
			release = need()
		case "--namespace":
			namespace = need()
		case "-f", "--values":
			files = append(files, need())
		case "--set":
			sets = append(sets, need())
		default:
			fmt.Fprintf(os.Stderr, "unknown argument %s\n", args[i])
			os.Exit(2)
		}
	}
	if err := render(chartDir, release, namespace, files, sets); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func render(chartDir, release, namespace string, files, sets []string) error {
	chartMeta, err := readYAML(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return err
	}
	vals, err := readYAML(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		extra, err := readYAML(f)
		if err != nil {
			return err
		}
		vals = merge(vals, extra)
	}
	for _, s := range sets {
		if err := setValue(vals, s); err != nil {
			return err
		}
	}
	name, _ := chartMeta["name"].(string)
	chart := map[string]interface{}{
		"Name": name, "Version": chartMeta["version"], "AppVersion": chartMeta["appVersion"],
		"Description": chartMeta["description"], "Type": chartMeta["type"],
	}
	basePath := name + "/templates"

	root := template.New("chart")
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = func(s string) values {
		out := values{}
		if err := yaml.Unmarshal([]byte(s), &out); err != nil {
			out["Error"] = err.Error()
		}
		return out
	}
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return nil, failure{msg}
		}
		if s, ok := v.(string); ok && s == "" {
			return nil, failure{msg}
		}
		return v, nil
	}
	funcs["fail"] = func(msg string) (string, error) { return "", failure{msg} }
	funcs["lookup"] = func(string, string, string, string) values { return values{} }
	funcs["include"] = func(name string, data interface{}) (string, error) {
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := root.Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		err = t.Execute(&buf, data)
		return buf.String(), err
	}
	root.Funcs(funcs).Option("missingkey=zero")

	entries, err := os.ReadDir(filepath.Join(chartDir, "templates"))
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		text, err := os.ReadFile(filepath.Join(chartDir, "templates", e.Name()))
		if err != nil {
			return err
		}
		full := basePath + "/" + e.Name()
		if _, err := root.New(full).Parse(string(text)); err != nil {
			return err
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)

	var out bytes.Buffer
	for _, n := range names {
		if strings.HasPrefix(n, "_") || !(strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			continue
		}
		full := basePath + "/" + n
		data := map[string]interface{}{
			"Values":  vals,
			"Chart":   chart,
			"Release": map[string]interface{}{"Name": release, "Namespace": namespace, "Service": "Helm", "IsInstall": true, "IsUpgrade": false, "Revision": 1},
			"Template": map[string]interface{}{"Name": full, "BasePath": basePath},
			"Capabilities": map[string]interface{}{
				"APIVersions": capabilities{map[string]bool{"monitoring.coreos.com/v1": true}},
				"KubeVersion": map[string]interface{}{"Version": "v1.29.0", "Major": "1", "Minor": "29"},
			},
		}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, full, data); err != nil {
			var f failure
			if errors.As(err, &f) {
				return errors.New(f.msg)
			}
			return err
		}
		body := strings.TrimSpace(buf.String())
		if body == "" {
			continue
		}
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", full, body)
	}
	_, err = os.Stdout.Write(out.Bytes())
	return err
}
