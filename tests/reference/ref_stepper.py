#!/usr/bin/env python3
"""Run yandex-tank 2.0.11's stepper for one queue of a config, the way `yandex-tank` does.

This is the reference side of the differential test (tests/differential.rs). It is
harness code, not a port: it only imports the reference package and wires its pieces
together exactly as the reference CLI does on its way to the stpd file.

    ref_stepper.py [--departures] [-o section.key=value]... CONFIG SECTION OUT
    ref_stepper.py --batch  < jobs.jsonl  > results.tsv

CONFIG is read like this:
  * `*.yaml`, `*.yml`, `*.json`: `yaml.safe_load`, then the `phantom` mapping;
  * `*.toml`: `tomllib`, each `[phantom]` / `[phantom-*]` table mapped onto the dict
    the INI converter would build (string values go through the converter's own
    per-option casters, native TOML values are taken as they are);
  * anything else: yandex-tank's `convert_ini`.
`-o` options are converted with `convert_single_option` and merged like the CLI does.
The Phantom schema defaults are then filled in, as cerberus normalisation does (a key that
is missing, or None and not nullable, gets its default). The validator itself is NOT run:
tank follows the stepper, which accepts more (fractional durations, for one).

SECTION picks the queue: `phantom` is the main one; extra queues are named by their INI /
TOML section (`phantom-1`), by `phantom-multi-<i>` (tank's name for YAML `multi` entries),
`multi[i]` / `phantom.multi[i]`, or by a multi entry's `name`. An extra queue is `dict(main, **entry)`, as `PhantomConfig.multi` builds it.

The stepper arguments are then prepared as `StepperWrapper.read_config` and
`__make_stpd_file` prepare them, and `Stepper(...).write(f)` writes OUT. The working
directory is left alone: relative ammo paths resolve against it, as in the reference.

Exit codes: 0 written; 1 the reference raised (`ERROR: <type>: <message>` on stderr);
2 bad usage of this script; 3 TIMEOUT (the reference did not finish within the wall-clock
guard, env REF_STEPPER_TIMEOUT seconds, default 20); 4 OUTPUT_LIMIT (it wrote more than
REF_STEPPER_MAX_BYTES, default 256 MiB, so it would most likely never stop).

`--departures` patches the reference where tank departs from it on purpose
(SEMANTICS.md section 0) so that it writes what tank is meant to write: `start(N)` in
instances schedules works, `autocases = uri|uniq` return bytes (and the INI spelling is
accepted). It is used to produce the committed expected outputs of departure cases;
every such file is checked by hand. `ammo_limit` (M + 1 records) is not patched: the
differential test cuts the reference output to M records instead.

`--batch` reads one JSON object per line from stdin:
    {"id": "...", "cwd": "...", "config": "...", "section": "...", "out": "...",
     "options": ["phantom.loop=2"], "departures": false, "timeout": 10}
and runs each job in a forked child (so the ~1.5 s import is paid once), at most
REF_STEPPER_JOBS (default 2) at a time. For each job it prints one line
`<id> TAB <exit code> TAB <last error line or empty>`, in completion order; the child's
stderr is kept in `<out>.err`.
"""

import copy
import errno
import json
import os
import re
import resource
import signal
import sys

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_TIMEOUT, EXIT_OUTPUT_LIMIT = 0, 1, 2, 3, 4


def _import_reference():
    """Import the reference lazily so `--help` works without it."""
    global yaml, tomllib, info, instance_plan, mark, Stepper, LoadProfile
    global convert_ini, convert_single_option, Option, recursive_dict_update, SCHEMA
    import logging
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format='%(levelname)s %(name)s: %(message)s')
    import yaml
    import tomllib
    from yandextank.stepper import info, instance_plan, mark
    from yandextank.stepper.main import Stepper, LoadProfile
    from yandextank.config_converter.converter import (
        convert_ini, convert_single_option, Option)
    from yandextank.common.util import recursive_dict_update
    from yandextank.plugins.Phantom.config.schema import SCHEMA
    # The progress line of the reference goes to stdout; keep stdout for --batch results.
    info.stdout = sys.stderr


PHANTOM_SECTION = re.compile(r'phantom(-.*)?')  # the converter's pattern, used with re.match


class Usage(Exception):
    pass


# ---------------------------------------------------------------------------- config

def _ini_sections(path):
    """Queue section names of an INI config in the converter's order: main, then the rest."""
    from configparser import RawConfigParser
    ini = RawConfigParser(strict=False)
    ini.read(path)
    names = [s.lower() for s in ini.sections() if PHANTOM_SECTION.match(s.lower())]
    return [n for n in names if n != 'phantom']


def _toml_value(key, value):
    """One TOML key/value as the INI converter would convert it (strings use its casters)."""
    if isinstance(value, str):
        return Option('Phantom', key, value, schema=SCHEMA).converted
    if key in ('rps_schedule', 'instances_schedule', 'stpd_file'):
        raise Usage('%s must be a string' % key)
    return {key: value}


def _toml_section(table):
    section = {}
    for key, value in table.items():
        if key == 'multi':
            section['multi'] = [_toml_section(entry) for entry in value]
            continue
        recursive_dict_update(section, _toml_value(key, value))
    return section


def load_phantom(path, options, departures):
    """The converted `phantom` mapping of a config, plus the names of its extra queues."""
    lower = path.lower()
    if lower.endswith(('.yaml', '.yml', '.json')):
        with open(path, 'rb') as f:
            root = yaml.safe_load(f) or {}
        extra_names = []
    elif lower.endswith('.toml'):
        with open(path, 'rb') as f:
            doc = tomllib.load(f)
        names = [k for k in doc if PHANTOM_SECTION.match(k.lower())]
        main = _toml_section(doc.get('phantom', {}))
        extra_names = [k.lower() for k in names if k.lower() != 'phantom']
        if extra_names:
            main.setdefault('multi', [])
            main['multi'] = [_toml_section(doc[k]) for k in names
                             if k.lower() != 'phantom'] + main['multi']
        root = {'phantom': main}
    else:
        if departures:
            _accept_ini_autocases_names()
        root = convert_ini(path)
        extra_names = _ini_sections(path)
    for opt in options:
        if '=' not in opt:
            raise Usage('-o wants section.key=value, got %r' % opt)
        key, value = opt.split('=', 1)
        recursive_dict_update(root, convert_single_option(key.strip(), value.strip()))
    if not isinstance(root.get('phantom'), dict):
        raise Usage('%s has no phantom section' % path)
    return root['phantom'], extra_names


def fill_defaults(section):
    """Cerberus normalisation of the Phantom schema: defaults for missing or None keys."""
    for key, rules in SCHEMA.items():
        if 'default' not in rules:
            continue
        if key not in section or (section[key] is None and not rules.get('nullable', False)):
            section[key] = copy.deepcopy(rules['default'])
    return section


def select_queue(main, extra_names, name):
    """The option dict of one queue (`dict(main, **entry)` for extra queues)."""
    multi = main.get('multi') or []
    if name == 'phantom':
        return main
    index = None
    m = re.fullmatch(r'(?:phantom\.)?multi\[(\d+)\]|phantom-multi-(\d+)', name)
    if name.lower() in extra_names:
        index = extra_names.index(name.lower())
    elif m:
        index = int(m.group(1) or m.group(2))
    else:
        for i, entry in enumerate(multi):
            if isinstance(entry, dict) and entry.get('name') == name:
                index = i
                break
    if index is None or index >= len(multi):
        raise Usage('no queue named %r (extra queues: %s)' % (name, extra_names or
                    ['multi[%d]' % i for i in range(len(multi))]))
    return dict(main, **multi[index])


# ---------------------------------------------------------------------------- departures

def _accept_ini_autocases_names():
    """SEMANTICS 0.3: the INI spelling of autocases accepts `uri` / `uniq` too."""
    casters = Option.SPECIAL_CONVERTERS['Phantom']
    integer = Option.TYPE_CASTERS['integer']

    def autocases(k, v):
        return {k: v.strip()} if v.strip() in ('uri', 'uniq') else integer(k, v)
    casters['autocases'] = autocases


def apply_departures():
    """Patch the reference into what tank is meant to write (SEMANTICS section 0, 2 and 3)."""
    import builtins
    import uuid

    # 0.2: `start(N)` passes the tuple of regex groups to int(); unwrap it.
    def int_unwrapping_tuples(x=0, *args):
        if isinstance(x, tuple) and len(x) == 1:
            x = x[0]
        return builtins.int(x, *args)
    instance_plan.int = int_unwrapping_tuples

    # 0.3: `uri` / `uniq` markers return str and crash the bytes formatting of stpd.
    markers = getattr(mark, '__markers')
    by_uri = markers['uri']
    markers['uri'] = lambda missile: by_uri(missile).encode('utf8')
    markers['uniq'] = lambda missile: uuid.uuid4().hex.encode('ascii')


# ---------------------------------------------------------------------------- stepper

def stepper_kwargs(cfg):
    """Stepper arguments exactly as StepperWrapper.read_config + __make_stpd_file make them."""
    ammo_file = cfg['ammofile']
    if ammo_file:
        ammo_file = os.path.expanduser(ammo_file)
    load_profile = LoadProfile(**cfg['load_profile'])
    if load_profile.load_type == 'stpd_file':
        raise Usage('load_profile stpd_file does not run the stepper')
    uris = cfg['uris']
    while '' in uris:
        uris.remove('')
    return dict(
        rps_schedule=load_profile.schedule if load_profile.is_rps() else None,
        http_ver=cfg['header_http'],
        ammo_file=ammo_file,
        instances_schedule=load_profile.schedule if load_profile.is_instances() else None,
        instances=int(cfg['instances']),
        loop_limit=cfg['loop'],
        ammo_limit=cfg['ammo_limit'],
        uris=uris,
        headers=[header.strip('[]') for header in cfg['headers']],
        autocases=cfg['autocases'],
        enum_ammo=cfg['enum_ammo'],
        ammo_type=cfg['ammo_type'],
        chosen_cases=cfg['chosen_cases'].encode('utf8').split(),
        use_cache=cfg['use_caching'],
        resource_manager=None,
    )


def run(config, section, out, options=(), departures=False):
    """Write the stpd of one queue to `out`. Raises whatever the reference raises."""
    main, extra_names = load_phantom(config, list(options), departures)
    main = fill_defaults(main)
    cfg = select_queue(main, extra_names, section)
    if departures:
        apply_departures()
    info.status = info.StepperStatus()
    stepper = Stepper(None, **stepper_kwargs(cfg))
    with open(out, 'wb', cfg['file_cache']) as f:
        stepper.write(f)


def guarded(config, section, out, options=(), departures=False, timeout=None):
    """run() with the wall-clock guard and the exit-code contract; returns the exit code."""
    if timeout is None:
        timeout = float(os.environ.get('REF_STEPPER_TIMEOUT', '20'))
    max_bytes = int(os.environ.get('REF_STEPPER_MAX_BYTES', str(256 << 20)))

    def on_alarm(signum, frame):
        sys.stderr.write('TIMEOUT: the reference did not finish within %gs\n' % timeout)
        sys.stderr.flush()
        os._exit(EXIT_TIMEOUT)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, resource.RLIM_INFINITY))
    try:
        run(config, section, out, options, departures)
    except Usage as e:
        sys.stderr.write('USAGE: %s\n' % e)
        return EXIT_USAGE
    except OSError as e:
        if e.errno == errno.EFBIG:
            sys.stderr.write('OUTPUT_LIMIT: the reference wrote more than %d bytes\n' % max_bytes)
            return EXIT_OUTPUT_LIMIT
        sys.stderr.write('ERROR: %s: %s\n' % (type(e).__name__, _message(e)))
        return EXIT_ERROR
    except BaseException as e:  # noqa: B902 -- StopIteration, RuntimeError, anything
        sys.stderr.write('ERROR: %s: %s\n' % (type(e).__name__, _message(e)))
        return EXIT_ERROR
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return EXIT_OK


def _message(e):
    # ConversionError keeps its text in .message, not in args.
    text = getattr(e, 'message', None) or str(e)
    return ' '.join(str(text).split('\n'))


# ---------------------------------------------------------------------------- batch

def batch(lines, jobs):
    running = {}

    def reap_one():
        pid, status = os.waitpid(-1, 0)
        job = running.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        last = ''
        try:
            with open(job['out'] + '.err', 'rb') as f:
                for raw in f.read().decode('utf8', 'replace').splitlines():
                    if raw.startswith(('ERROR: ', 'TIMEOUT', 'OUTPUT_LIMIT', 'USAGE')):
                        last = raw
        except OSError:
            pass
        sys.stdout.write('%s\t%d\t%s\n' % (job['id'], code, last.replace('\t', ' ')))
        sys.stdout.flush()

    for line in lines:
        if not line.strip():
            continue
        job = json.loads(line)
        while len(running) >= jobs:
            reap_one()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = EXIT_ERROR
            try:
                fd = os.open(job['out'] + '.err', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                os.chdir(job['cwd'])
                code = guarded(job['config'], job['section'], job['out'],
                               job.get('options', []), job.get('departures', False),
                               job.get('timeout'))
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        running[pid] = job
    while running:
        reap_one()


def main(argv):
    args = argv[1:]
    if not args or args[0] in ('-h', '--help'):
        sys.stdout.write(__doc__)
        return EXIT_OK if args else EXIT_USAGE
    _import_reference()
    if args == ['--batch']:
        batch(sys.stdin, max(1, int(os.environ.get('REF_STEPPER_JOBS', '2'))))
        return EXIT_OK
    departures, options, rest = False, [], []
    while args:
        a = args.pop(0)
        if a == '--departures':
            departures = True
        elif a == '-o' and args:
            options.append(args.pop(0))
        else:
            rest.append(a)
    if len(rest) != 3:
        sys.stderr.write('usage: ref_stepper.py [--departures] [-o s.k=v]... CONFIG SECTION OUT\n')
        return EXIT_USAGE
    return guarded(rest[0], rest[1], rest[2], options, departures)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
