"""A Darshan log read into a summary: the header checks, the read through the Darshan library in a child process
(`derive`), the job record's checks (`jobrecord`) and the summary's data types (`summary`). The darshan importer,
`diagnose` and the archive scan all read logs through it; it knows none of them."""
