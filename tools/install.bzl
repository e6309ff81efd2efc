"""hoshmem_install: an executable that copies the built hoshmem tree into a PREFIX.

`bazel run //:install -- PREFIX` runs it (PREFIX relative to where bazel was started). Tests can
list the target in `data` and run it directly: it finds its files through its runfiles.
"""

def _runfiles_path(ctx, f):
    # Files of this repository live under <runfiles>/<workspace name>/<short_path>.
    return ctx.workspace_name + "/" + f.short_path

def _one(files, suffix, what):
    chosen = [f for f in files if f.basename.endswith(suffix)]
    if len(chosen) != 1:
        fail("hoshmem_install: expected exactly one %s file (*%s) in %s" % (what, suffix, [f.short_path for f in files]))
    return chosen[0]

def _hoshmem_install_impl(ctx):
    headers = [
        h
        for h in ctx.attr.headers[CcInfo].compilation_context.headers.to_list()
        if h.short_path.startswith("include/shmem/")
    ]
    if not headers:
        fail("hoshmem_install: %s provides no headers under include/shmem/" % ctx.attr.headers.label)
    shared_lib = _one(ctx.files.shared_lib, ".so", "shared library")
    static_lib = _one(ctx.files.static_lib, ".a", "static library")

    # One "mode destination source" line per installed file.
    entries = [
        ("755", "bin/oshrun", ctx.executable.oshrun),
        ("755", "bin/oshcc", ctx.file.wrapper),
        ("755", "bin/oshc++", ctx.file.wrapper),
        ("755", "lib/" + shared_lib.basename, shared_lib),
        ("644", "lib/" + static_lib.basename, static_lib),
    ] + [("644", h.short_path, h) for h in headers]  # include/shmem/..., subdirectories kept
    manifest = "\n".join(["%s %s %s" % (mode, dest, _runfiles_path(ctx, src)) for mode, dest, src in entries])

    script = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.expand_template(
        template = ctx.file._script_template,
        output = script,
        substitutions = {
            "%MANIFEST%": manifest,
            "%PC_TEMPLATE%": _runfiles_path(ctx, ctx.file.pc_template),
            "%VERSION%": ctx.attr.version,
        },
        is_executable = True,
    )
    files = [src for _, _, src in entries] + [ctx.file.pc_template]
    runfiles = ctx.runfiles(files = files).merge(ctx.attr.oshrun[DefaultInfo].default_runfiles)
    return [DefaultInfo(executable = script, runfiles = runfiles, files = depset([script]))]

hoshmem_install = rule(
    implementation = _hoshmem_install_impl,
    executable = True,
    attrs = {
        "oshrun": attr.label(executable = True, cfg = "target", mandatory = True),
        "wrapper": attr.label(allow_single_file = True, mandatory = True),
        "shared_lib": attr.label(allow_files = True, mandatory = True),
        "static_lib": attr.label(allow_files = True, mandatory = True),
        "headers": attr.label(providers = [CcInfo], mandatory = True),
        "pc_template": attr.label(allow_single_file = True, mandatory = True),
        "version": attr.string(mandatory = True),
        "_script_template": attr.label(allow_single_file = True, default = ":install.sh.tpl"),
    },
)
