package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shardlease/shardlease/shard"
)

func (a *app) rules(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl rules", flag.ContinueOnError)
	conn := a.connFlags(fs)
	force := fs.Bool("force", false, "write rules that leave shards with no live worker allowed to own them (they stay unowned)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl rules -prefix P                       list the placement rules
       shardctl rules -prefix P add KIND SHARDS LABELS  add one
       shardctl rules -prefix P remove N                remove rule N (as listed)
       shardctl rules -prefix P clear                   remove every rule

A rule places shards by the workers' labels and zones (shardd --zone,
--labels). KIND is pin (only workers whose labels match may own the
shards), avoid (workers whose labels match may not) or prefer (workers
whose labels match are chosen first, as far as balance allows); pin and
avoid are never broken. SHARDS is a shard ID or a prefix ending in '*'
("stream/shard-01*"; "*": all). LABELS is key=value,...; the key "zone"
matches the worker's zone. Example:

  shardctl rules -prefix P add pin 'stream/shard-01*' zone=eu-west-1a

Rules are stored in the fleet's balance policy (P/policy) and followed by
the assignor from its next step; a shard moves at the move budget. A
shard no live worker may own stays unowned and is reported by status, the
dashboard and shardlease_shards_unplaceable. A change that would leave
such shards, or a new rule about no shard of the fleet (a misspelt prefix,
a '*' the shell expanded), is refused unless -force. Two operators editing
at once: the last write wins. Rules are written only while every
live worker speaks the rules step (release 0.1.0 cannot read them):
remove them all before rolling a worker back to 0.1.0.

`)
		fs.PrintDefaults()
	}
	pos, err := a.parseFlagsUpTo(fs, args, 0, 4, "the subcommand")
	if err != nil {
		return err
	}
	fc, err := a.open(conn)
	if err != nil {
		return err
	}
	defer fc.close()
	snap, err := fc.snapshot(ctx)
	if err != nil {
		return err
	}
	var rules []shard.PlacementRule
	if snap.Policy != nil {
		rules = snap.Policy.Rules
	}
	if len(pos) == 0 {
		a.listRules(fc.name, rules)
		return nil
	}
	next, err := editRules(rules, pos)
	if err != nil {
		return err
	}
	if pos[0] == "remove" {
		n, _ := strconv.Atoi(pos[1])
		fmt.Fprintf(a.stdout, "removing rule %d: %s\n", n, rules[n-1])
	}
	c, err := fc.operator(a).SetRules(ctx, next, *force)
	if err != nil {
		return fc.explain(err, "write")
	}
	fmt.Fprintf(a.stdout, "fleet %s placement rules set (%d, were %d); the assignor follows them from its next step\n", fc.name, len(c.New), len(c.Old))
	a.listRules(fc.name, c.New)
	if len(c.Unplaceable) > 0 {
		fmt.Fprintf(a.stdout, "UNPLACEABLE: %s\n", unplaceableLine(c.Unplaceable))
	}
	return nil
}

// editRules applies the command line (add, remove N, clear) to rules.
func editRules(rules []shard.PlacementRule, pos []string) ([]shard.PlacementRule, error) {
	switch pos[0] {
	case "add":
		if len(pos) != 4 {
			return nil, usagef("rules add takes KIND SHARDS LABELS (3 words, quote a '*'), got %d: %q", len(pos)-1, strings.Join(pos[1:], " "))
		}
		r, err := shard.ParseRule(strings.Join(pos[1:], " "))
		if err != nil {
			return nil, usagef("%v", err)
		}
		if slices.ContainsFunc(rules, r.Equal) {
			return nil, usagef("rule %q is stored already", r)
		}
		return append(slices.Clone(rules), r), nil
	case "remove":
		if len(pos) != 2 {
			return nil, usagef("rules remove takes the rule's number as 'shardctl rules' lists it")
		}
		n, err := strconv.Atoi(pos[1])
		if err != nil || n < 1 || n > len(rules) {
			return nil, usagef("rules remove %q: want a rule's number, 1 to %d ('shardctl rules' lists them)", pos[1], len(rules))
		}
		return slices.Delete(slices.Clone(rules), n-1, n), nil
	case "clear":
		if len(pos) != 1 {
			return nil, usagef("rules clear takes nothing more, got %q", strings.Join(pos[1:], " "))
		}
		return nil, nil
	}
	return nil, usagef("rules %q: want add, remove or clear (or nothing, to list them)", pos[0])
}

// listRules prints the rules, numbered.
func (a *app) listRules(name string, rules []shard.PlacementRule) {
	if len(rules) == 0 {
		fmt.Fprintf(a.stdout, "fleet %s has no placement rules\n", name)
		return
	}
	for i, r := range rules {
		fmt.Fprintf(a.stdout, "%3d  %s\n", i+1, r)
	}
}

// unplaceableLine names how many shards no live worker may own, and the
// first few.
func unplaceableLine(ids []shard.ID) string {
	first := make([]string, 0, 5)
	for _, id := range ids[:min(len(ids), 5)] {
		first = append(first, string(id))
	}
	more := ""
	if len(ids) > len(first) {
		more = ", …"
	}
	return fmt.Sprintf("%d shards no live worker may own under the placement rules (%s%s): they stay unowned until a worker the rules allow joins or the rules change (shardctl rules)",
		len(ids), strings.Join(first, ", "), more)
}
