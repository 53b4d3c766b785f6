package main

import (
	"github.com/spf13/pflag"
)

// deprecatedAlias keeps an old spelling of a flag working, hidden from
// the help, sharing the new flag's value; using it prints which spelling
// replaced it. Every command spells one setting one way (--brokers,
// -c/--config, --mode); docs/CHANGES.md lists the old spellings.
func deprecatedAlias(fs *pflag.FlagSet, name, old string) {
	f := fs.Lookup(name)
	if f == nil {
		panic("deprecatedAlias: no flag --" + name)
	}
	fs.AddFlag(&pflag.Flag{Name: old, Usage: f.Usage, Value: f.Value, DefValue: f.DefValue, NoOptDefVal: f.NoOptDefVal})
	if err := fs.MarkDeprecated(old, "use --"+name); err != nil {
		panic(err)
	}
}
