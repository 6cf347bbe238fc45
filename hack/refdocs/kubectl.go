package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/util/homedir"

	"github.com/berth-dev/berth/pkg/kubectlberth"
)

func kubectlPage(*code) (string, error) {
	var b strings.Builder
	writeCommand(&b, kubectlberth.NewCommand(genericiooptions.IOStreams{}))
	return b.String(), nil
}

// writeCommand writes a command, its flags and then its subcommands, in
// the order --help lists them.
func writeCommand(b *strings.Builder, cmd *cobra.Command) {
	if cmd.Hidden || cmd.Deprecated != "" {
		return
	}
	fmt.Fprintf(b, "## %s\n\n```text\n%s\n```\n\n", cmd.CommandPath(), cmd.UseLine())
	if cmd.Short != "" {
		fmt.Fprintf(b, "%s.\n\n", escapeText(strings.TrimSuffix(cmd.Short, ".")))
	}
	if cmd.Long != "" {
		fmt.Fprintf(b, "%s\n\n", escapeText(cmd.Long))
	}
	if len(cmd.Aliases) > 0 {
		fmt.Fprintf(b, "Also: `%s`.\n\n", strings.Join(cmd.Aliases, "`, `"))
	}
	if cmd.Example != "" {
		fmt.Fprintf(b, "Examples:\n\n```sh\n%s\n```\n\n", strings.TrimRight(cmd.Example, "\n"))
	}
	var rows [][]string
	cmd.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		name := codeSpan("--" + f.Name)
		if f.Shorthand != "" {
			name = codeSpan("-"+f.Shorthand) + ", " + name
		}
		rows = append(rows, []string{name, f.Value.Type(), codeSpan(flagDefault(f)), escapeText(f.Usage)})
	})
	if len(rows) > 0 {
		if cmd.HasParent() {
			b.WriteString("Flags:\n\n")
		} else {
			b.WriteString("Flags of every command, kubectl's own among them:\n\n")
		}
		table(b, []string{"flag", "type", "default", "description"}, rows)
	}
	for _, sub := range cmd.Commands() {
		writeCommand(b, sub)
	}
}

// flagDefault is a flag's default as the page shows it, the same on every
// machine: kubectl's cache is in the user's home.
func flagDefault(f *pflag.Flag) string {
	if home := homedir.HomeDir(); home != "" && home != "/" {
		if rest, ok := strings.CutPrefix(f.DefValue, home); ok {
			return "$HOME" + rest
		}
	}
	return f.DefValue
}

// escapeText makes a command's help text safe as Markdown.
func escapeText(s string) string {
	return strings.ReplaceAll(s, "<", `\<`)
}
