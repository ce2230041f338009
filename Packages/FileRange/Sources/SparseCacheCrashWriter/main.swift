// crash writer
