package io.stoke.cli.harness;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SummaryReportTest {
    /** torch_loader.py's advice when torch is missing runs over several lines, a blank one included. */
    @Test
    void aMultiLineNoteIsOneBlockquote() {
        String note = "PyTorch's DataLoader was not run: cannot import torch.\n  On Debian: apt-get install python3-torch\n\n"
                + "  then pass --python PATH.";
        String md = SummaryReport.render(List.of(), new ReportInfo("m", 2, List.of(), List.of(note)));
        assertEquals(1, md.split("\\*\\*Note:\\*\\*", -1).length - 1, md);
        assertTrue(md.contains("> **Note:** PyTorch's DataLoader was not run: cannot import torch.\n"
                + ">   On Debian: apt-get install python3-torch\n>\n>   then pass --python PATH.\n\n"), md);
    }

    @Test
    void reportInfoRoundTripsThroughReportJson(@TempDir Path tmp) {
        ReportInfo info = new ReportInfo("2 cores available to the JVM, Test CPU", 2, List.of("condition, \"one\"", "two"),
                List.of("first line\n  second line\n\nfourth"));
        info.write(tmp);
        assertEquals(info, ReportInfo.read(tmp));
    }
}
