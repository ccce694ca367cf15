broken {
