/* reader API: written with the reader (issue 3) */
