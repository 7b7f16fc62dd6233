"""Job-script parsing: the #SBATCH block as sbatch reads it, #IOADVISE lines, command-line overrides."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from ioadvisor.errors import ImportFormatError
from ioadvisor.ioadvise_lines import read_line
from ioadvisor.job import describe
from ioadvisor.slurm.jobscript import parse_jobscript, parse_sbatch_args

SCRIPT = """#!/bin/bash -l
# a comment inside the block

#SBATCH -N 2
#SBATCH --ntasks-per-node=4 -C "BEEOND&nvme"
#SBATCH --output="/a b/slurm-%j.out" --exclusive
#SBATCH --chdir /work/x -n8 --job-name=io
#IOADVISE api=MPIIO bytes_per_rank=4GiB layout=shared files=1 lifetime=job
module load mpi
#SBATCH --nodes=99
srun ./app
"""


def test_all_spellings_of_options():
    js = parse_jobscript(SCRIPT)
    assert js.shebang == "#!/bin/bash -l"
    assert js.interpreter == "bash"
    assert js.option("nodes") == "2" and js.option("N") == "2"
    assert js.option("ntasks-per-node") == "4"
    assert js.option("constraint") == "BEEOND&nvme"
    assert js.option("output") == "/a b/slurm-%j.out"
    assert js.option("exclusive") == ""
    assert js.option("chdir") == "/work/x"
    assert js.option("ntasks") == "8"
    assert js.option("job-name") == "io"


def test_block_ends_at_first_command_and_later_sbatch_is_ignored():
    js = parse_jobscript(SCRIPT)
    assert js.lines[js.block_end] == "module load mpi"
    assert js.option("nodes") == "2"
    assert any("line 10" in w and "ignored" in w for w in js.warnings)


def test_command_line_overrides_script():
    js = parse_jobscript(SCRIPT)
    cli = parse_sbatch_args(["-N", "3", "--constraint=nvme", "--parsable"])
    assert js.option("nodes", cli) == "3"
    assert js.option("constraint", cli) == "nvme"
    assert js.options(cli)["ntasks-per-node"] == "4"


def test_ioadvise_lines_and_workload_fields():
    assert describe(script=SCRIPT).api == "mpiio"
    w = describe(script=SCRIPT).workload()
    assert w.nodes == 2 and w.ranks_per_node == 4
    assert w.bytes_per_rank == 4 * 1024**3
    assert w.files_per_rank == 1 and w.lifetime == "job"


def test_bad_ioadvise_size_names_the_line():
    with pytest.raises(ImportFormatError) as e:
        describe(script="#!/bin/sh\n#IOADVISE bytes_per_rank=lots\ntrue\n", script_path="job.sh")
    assert "job.sh:2:" in str(e.value)


def test_unknown_ioadvise_key_is_a_warning_not_an_error():
    s = describe(script="#!/bin/sh\n#IOADVISE colour=blue api=POSIX\n", strict=False)
    assert s.api == "posix"
    assert any("colour" in w for w in s.warnings)


def test_no_shebang_and_no_directives():
    js = parse_jobscript("echo hi\n")
    assert js.shebang is None and js.directives == () and js.block_end == 0
    assert any("#!" in w for w in js.warnings)


def test_unbalanced_quote_does_not_crash():
    js = parse_jobscript('#!/bin/bash\n#SBATCH --job-name="oops\n#SBATCH -N 1\n')
    assert js.option("nodes") == "1"


lines = st.one_of(
    st.text(max_size=60),
    st.builds(lambda o, v: f"#SBATCH {o} {v}", st.sampled_from(["-N", "--nodes", "-C", "--output=", "-n", "--", "-"]),
              st.text(max_size=20)),
    st.builds(lambda t: "#IOADVISE " + t, st.text(max_size=40)),
    st.sampled_from(["", "#", "#!/bin/bash", "  ", "srun x", "#SBATCH", '#SBATCH "', "#SBATCH -"]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(lines, max_size=15))
def test_parser_never_crashes(body):
    text = "\n".join(body)
    js = parse_jobscript(text)
    assert 0 <= js.block_end <= len(js.lines)
    js.options()
    for line in body:        # the #IOADVISE reader fails only with its one reason, never otherwise
        try:
            read_line(line)
        except ValueError as e:
            assert "is not closed" in str(e)


def test_megabyte_lines_parse_in_linear_time():
    import time
    text = "#!/bin/bash\n#SBATCH --job-name=" + "x" * (1 << 20) + "\n#IOADVISE api=" + "A" * (1 << 20) + "\ntrue\n"
    t0 = time.process_time()           # this process's CPU: a loaded machine cannot fail it
    js = parse_jobscript(text)
    assert time.process_time() - t0 < 2
    assert len(js.option("job-name")) == 1 << 20 and js.block_end == 3
