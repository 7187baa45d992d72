#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generates redis-compat/commands.def and redis-compat/commands_meta.def from
redis-compat/commands/*.json (CONTRIBUTING.md, "Layout"; the idea of Redis's
utils/generate-command-code.py, written from scratch).

  tools/gen-commands.py           regenerate both files in place
  tools/gen-commands.py --check   exit 1 (and say why) if the checked-in files are stale

JSON fields: name, container (parent command for subcommands), arity (Redis convention:
negative = at least -arity), flags, acl_categories, key_specs {first_key, last_key, step},
group, summary, since, complexity, arguments (optional; name, type, token, flags,
key_spec_index, nested arguments for oneof/block).

commands.def holds only macro calls, one per command, containers before their subcommands:
  RC_COMMAND(ident, "name", arity, flags, first, last, step, "group", "summary", "since", "cx")
  RC_SUBCOMMAND(parent, ident, "parent|name", arity, flags, first, last, step, "group",
                "summary", "since", "cx")
commands_meta.def holds what the server's handler binding does not need:
  RC_META(owner, "fullname", acl_category_bits)
  RC_ARG(owner, depth, "name", type, "token" or NULL, arg_flags, key_spec_index)
where owner is ident or parent_ident.
"""
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, 'redis-compat', 'commands')
DEF = os.path.join(ROOT, 'redis-compat', 'commands.def')
META = os.path.join(ROOT, 'redis-compat', 'commands_meta.def')

# Order matches the RC_CMD_* bits in redis-compat/rc_commands.h.
FLAGS = ['write', 'readonly', 'denyoom', 'module', 'admin', 'pubsub', 'noscript', 'blocking',
         'loading', 'stale', 'skip_monitor', 'skip_slowlog', 'asking', 'fast', 'no_auth',
         'may_replicate', 'no_mandatory_keys', 'no_async_loading', 'no_multi', 'movablekeys',
         'allow_busy']
ACL = ['keyspace', 'read', 'write', 'set', 'sortedset', 'list', 'hash', 'string', 'bitmap',
       'hyperloglog', 'geo', 'stream', 'pubsub', 'admin', 'fast', 'slow', 'blocking',
       'dangerous', 'connection', 'transaction', 'scripting']
ARG_TYPES = ['string', 'integer', 'double', 'key', 'pattern', 'unix-time', 'pure-token',
             'oneof', 'block']
ARG_FLAGS = ['optional', 'multiple', 'multiple_token']
FIELDS = {'name', 'container', 'arity', 'flags', 'acl_categories', 'key_specs', 'group',
          'summary', 'since', 'complexity', 'arguments'}


def fail(path, msg):
    sys.exit('gen-commands: %s: %s' % (os.path.relpath(path, ROOT), msg))


def cstr(s):
    out = []
    for ch in s:
        if ch in '"\\':
            out.append('\\' + ch)
        elif ' ' <= ch <= '~':
            out.append(ch)
        else:
            fail(SRC, 'non-ASCII text %r' % s)
    return '"' + ''.join(out) + '"'


def ident(name, path):
    i = name.replace('-', '_').replace('.', '_')  # mc.putstart -> mc_putstart
    if not i.replace('_', '').isalnum() or not i.islower():
        fail(path, 'name %r cannot become a C identifier' % name)
    return i


def bits(names, table, prefix, path):
    for n in names:
        if n not in table:
            fail(path, 'unknown %s %r' % (prefix, n))
    if not names:
        return '0'
    return ' | '.join('%s_%s' % (prefix, n.upper()) for n in sorted(names, key=table.index))


def load():
    cmds = []
    for path in sorted(glob.glob(os.path.join(SRC, '*.json'))):
        with open(path) as f:
            try:
                d = json.load(f)
            except ValueError as e:
                fail(path, str(e))
        extra = set(d) - FIELDS
        if extra:
            fail(path, 'unknown fields %s' % sorted(extra))
        for req in ('name', 'arity', 'flags', 'group', 'summary', 'since', 'complexity'):
            if req not in d:
                fail(path, 'missing field %r' % req)
        if not isinstance(d['arity'], int) or d['arity'] == 0:
            fail(path, 'arity must be a non-zero integer')
        want = (d['container'] + '-' if 'container' in d else '') + d['name'] + '.json'
        if os.path.basename(path) != want:
            fail(path, 'file should be named %s' % want)
        d['_path'] = path
        cmds.append(d)
    return cmds


def emit_args(lines, owner, args, depth, path):
    for a in args:
        if a.get('type') not in ARG_TYPES:
            fail(path, 'argument %r: bad type %r' % (a.get('name'), a.get('type')))
        fl = bits(a.get('flags', []), ARG_FLAGS, 'RC_ARG_FLAG', path)
        tok = cstr(a['token']) if 'token' in a else 'NULL'
        lines.append('RC_ARG(%s, %d, %s, RC_ARG_TYPE_%s, %s, %s, %d)' % (
            owner, depth, cstr(a['name']), a['type'].upper().replace('-', '_'), tok, fl,
            a.get('key_spec_index', -1)))
        if a['type'] in ('oneof', 'block'):
            if not a.get('arguments'):
                fail(path, 'argument %r needs nested arguments' % a['name'])
            emit_args(lines, owner, a['arguments'], depth + 1, path)
        elif 'arguments' in a:
            fail(path, 'argument %r: only oneof/block nest' % a['name'])


def generate(cmds):
    top = sorted([c for c in cmds if 'container' not in c], key=lambda c: c['name'])
    names = {c['name'] for c in top}
    subs = {}
    for c in cmds:
        if 'container' in c:
            if c['container'] not in names:
                fail(c['_path'], 'container %r has no JSON file' % c['container'])
            subs.setdefault(c['container'], []).append(c)
    head = ('/* Generated by tools/gen-commands.py from the JSON files in redis-compat/commands/. '
            'Do not edit. */')
    d, m = [head], [head]
    for c in top:
        group = [(None, c)] + [(c, s) for s in sorted(subs.get(c['name'], []),
                                                      key=lambda s: s['name'])]
        for parent, x in group:
            path = x['_path']
            ks = x.get('key_specs', {})
            fk, lk, st = ks.get('first_key', 0), ks.get('last_key', 0), ks.get('step', 0)
            fl = bits(x['flags'], FLAGS, 'RC_CMD', path)
            acl = set(x.get('acl_categories', []))
            # Implicit categories, as Redis derives them from the flags.
            if 'write' in x['flags']:
                acl.add('write')
            if 'readonly' in x['flags']:
                acl.add('read')
            if 'admin' in x['flags']:
                acl.update(('admin', 'dangerous'))
            if 'pubsub' in x['flags']:
                acl.add('pubsub')
            if 'blocking' in x['flags']:
                acl.add('blocking')
            acl.add('fast' if 'fast' in x['flags'] else 'slow')
            tail = '%s, %d, %s, %d, %d, %d, %s, %s, %s, %s' % (
                cstr(x['name'] if parent is None else parent['name'] + '|' + x['name']),
                x['arity'], fl, fk, lk, st, cstr(x['group']), cstr(x['summary']),
                cstr(x['since']), cstr(x['complexity']))
            me = ident(x['name'], path)
            if parent is None:
                d.append('RC_COMMAND(%s, %s)' % (me, tail))
                owner, full = me, x['name']
            else:
                pi = ident(parent['name'], path)
                d.append('RC_SUBCOMMAND(%s, %s, %s)' % (pi, me, tail))
                owner, full = pi + '_' + me, parent['name'] + '|' + x['name']
            if parent is None and x['name'] in subs:
                acl.discard('fast')
                acl.discard('slow')
                acl.update(x.get('acl_categories', []))
                acl.add('slow')
            m.append('RC_META(%s, %s, %s)' % (owner, cstr(full),
                                              bits(sorted(acl), ACL, 'RC_ACL', path)))
            emit_args(m, owner, x.get('arguments', []), 0, path)
    return '\n'.join(d) + '\n', '\n'.join(m) + '\n'


def main():
    check = '--check' in sys.argv[1:]
    d, m = generate(load())
    stale = []
    for path, text in ((DEF, d), (META, m)):
        try:
            with open(path) as f:
                old = f.read()
        except OSError:
            old = None
        if old != text:
            stale.append(path)
            if not check:
                with open(path + '.tmp', 'w') as f:
                    f.write(text)
                os.replace(path + '.tmp', path)
    if check and stale:
        for p in stale:
            print('gen-commands: %s is stale; run tools/gen-commands.py' %
                  os.path.relpath(p, ROOT))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
