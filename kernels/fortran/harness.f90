! Shared harness of the Fortran kernel programs: the kernel program contract
! of docs/contracts.md, with the same semantics as kernels/c/harness.c
! (arguments, n-sweep, first-call / warm-up / repeat timing, NaN poisoning,
! atomic CSV, --check, --dump).  Inputs are the same numbers as in C for the
! same --seed (same counter-based generator), stored column-major as (d, n):
! column i is row i of the row-major (n, d) matrix, so dumps are identical.
module harness
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64, error_unit, output_unit
  use, intrinsic :: iso_c_binding, only: c_int, c_char, c_null_char
  use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan, ieee_is_nan
  use omp_lib
  implicit none
  private

  public :: harness_cfg, harness_main, fill_normal, fill_nan, normal_at, default_ff
  public :: rel_accum, rel_acc, rel_final, rel_err, rel_worst, not_checked
  public :: dump_open, dump_array, dump_close, qnan

  type :: harness_cfg
    integer(int64) :: n = 0, d = 64, ff = 0
    integer :: variant = 1          ! index into the variants list (1-based)
    integer(int64) :: seed = 0
    logical :: check = .false.
  end type harness_cfg

  type :: rel_accum
    real(real64) :: diff2 = 0, ref2 = 0
    logical :: nan = .false.
  end type rel_accum

  ! value a check returns when it did not check (rel_err stays empty)
  real(real64), parameter :: not_checked = -1.0_real64

  abstract interface
    logical function setup_i(cfg)
      import :: harness_cfg
      type(harness_cfg), intent(in) :: cfg
    end function setup_i
    subroutine action_i()
    end subroutine action_i
    function check_i() result(err)
      import :: real64
      real(real64) :: err
    end function check_i
    logical function dump_i(dir)
      character(len=*), intent(in) :: dir
    end function dump_i
  end interface

  interface
    integer(c_int) function c_rename(old, new) bind(C, name='rename')
      import :: c_int, c_char
      character(kind=c_char), dimension(*), intent(in) :: old, new
    end function c_rename
    ! exit without gfortran's "STOP 2" line: usage errors are one line
    subroutine c_exit(status) bind(C, name='exit')
      import :: c_int
      integer(c_int), value :: status
    end subroutine c_exit
    integer(c_int) function c_mkdir(path, mode) bind(C, name='mkdir')
      import :: c_int, c_char
      character(kind=c_char), dimension(*), intent(in) :: path
      integer(c_int), value :: mode
    end function c_mkdir
  end interface

  type :: row_t
    integer(int64) :: n, repeat
    real(real64) :: time_s, first_call_s, rel_err
    logical :: checked
  end type row_t

  character(len=:), allocatable :: prog, kname, usage
  integer :: dump_unit = 0, dump_count = 0
  logical :: dump_failed = .false., dump_is_open = .false.   ! newunit= units are negative
  character(len=:), allocatable :: dump_dir

contains

  ! ---- arguments --------------------------------------------------------------

  subroutine usage_error(msg)
    character(len=*), intent(in) :: msg
    write (error_unit, '(a)') prog // ': error: ' // msg // ' (' // usage // ')'
    flush (error_unit)
    call c_exit(2_c_int)
  end subroutine usage_error

  ! strict: digits only, >= lo, no overflow
  logical function parse_int(s, lo, v)
    character(len=*), intent(in) :: s
    integer(int64), intent(in) :: lo
    integer(int64), intent(out) :: v
    integer :: i, c
    parse_int = .false.
    v = 0
    if (len(s) == 0 .or. len(s) > 18) return
    do i = 1, len(s)
      c = ichar(s(i:i)) - ichar('0')
      if (c < 0 .or. c > 9) return
      v = v * 10 + c
    end do
    parse_int = v >= lo
  end function parse_int

  function get_arg(i) result(s)
    integer, intent(in) :: i
    character(len=:), allocatable :: s
    integer :: length
    call get_command_argument(i, length=length)
    allocate (character(len=length) :: s)
    if (length > 0) call get_command_argument(i, s)
  end function get_arg

  subroutine parse_ns(s, ns)
    character(len=*), intent(in) :: s
    integer(int64), allocatable, intent(out) :: ns(:)
    integer :: count, i, start, k
    count = 1
    do i = 1, len(s)
      if (s(i:i) == ',') count = count + 1
    end do
    allocate (ns(count))
    start = 1
    k = 0
    do i = 1, len(s) + 1
      if (i == len(s) + 1) then
        k = k + 1
        if (.not. parse_int(s(start:len(s)), 1_int64, ns(k))) &
          call usage_error("--n: '" // s // "' is not a comma-separated list of positive integers")
      else if (s(i:i) == ',') then
        k = k + 1
        if (.not. parse_int(s(start:i - 1), 1_int64, ns(k))) &
          call usage_error("--n: '" // s // "' is not a comma-separated list of positive integers")
        start = i + 1
      end if
    end do
  end subroutine parse_ns

  subroutine parse_args(variants, takes_ff, cfg, ns, threads, repeats, warmup, out, dump)
    character(len=*), intent(in) :: variants(:)
    logical, intent(in) :: takes_ff
    type(harness_cfg), intent(out) :: cfg
    integer(int64), allocatable, intent(out) :: ns(:)
    integer(int64), intent(out) :: threads, repeats, warmup
    character(len=:), allocatable, intent(out) :: out, dump
    character(len=:), allocatable :: opt, val, arg
    integer :: i, j, eq, nargs
    integer(int64) :: v
    logical :: have_n, found
    have_n = .false.
    threads = 0
    repeats = 5
    warmup = 1
    out = ''
    dump = ''
    nargs = command_argument_count()
    i = 1
    do while (i <= nargs)
      arg = get_arg(i)
      eq = index(arg, '=')
      if (arg(1:min(2, len(arg))) == '--' .and. eq > 0) then
        opt = arg(1:eq - 1)
        val = arg(eq + 1:)
      else
        opt = arg
        if (allocated(val)) deallocate (val)
      end if
      if (opt == '--help' .or. opt == '-h') then
        write (output_unit, '(a)') usage
        flush (output_unit)
        call c_exit(0_c_int)
      end if
      if (opt == '--check') then
        if (allocated(val)) call usage_error('--check takes no value')
        cfg%check = .true.
        i = i + 1
        cycle
      end if
      select case (opt)
      case ('--n', '--d', '--threads', '--repeats', '--warmup', '--device', '--dtype', &
            '--variant', '--seed', '--out', '--dump')
      case ('--ff')
        if (.not. takes_ff) call usage_error("unknown argument '" // arg // "'")
      case default
        call usage_error("unknown argument '" // arg // "'")
      end select
      if (.not. allocated(val)) then
        if (i + 1 > nargs) call usage_error(opt // ' needs a value')
        i = i + 1
        val = get_arg(i)
      end if
      select case (opt)
      case ('--n')
        call parse_ns(val, ns)
        have_n = .true.
      case ('--d')
        if (.not. parse_int(val, 1_int64, cfg%d)) call usage_error("--d: '" // val // "' is not a positive integer")
      case ('--ff')
        if (.not. parse_int(val, 1_int64, cfg%ff)) call usage_error("--ff: '" // val // "' is not a positive integer")
      case ('--threads')
        if (.not. parse_int(val, 1_int64, threads) .or. threads > huge(1)) &
          call usage_error("--threads: '" // val // "' is not a positive integer")
      case ('--repeats')
        if (.not. parse_int(val, 1_int64, repeats)) call usage_error("--repeats: '" // val // "' is not a positive integer")
      case ('--warmup')
        if (.not. parse_int(val, 0_int64, warmup)) call usage_error("--warmup: '" // val // "' is not a non-negative integer")
      case ('--seed')
        if (.not. parse_int(val, 0_int64, v) .or. v > 4294967295_int64) &
          call usage_error("--seed: '" // val // "' is not an integer in 0..4294967295")
        cfg%seed = v
      case ('--device')
        if (val /= 'cpu') call usage_error("--device '" // val // "' is not supported: the Fortran implementation runs on cpu only")
      case ('--dtype')
        if (val /= 'fp32') call usage_error("--dtype '" // val // "' is not supported: the Fortran implementation is fp32 only")
      case ('--variant')
        found = .false.
        do j = 1, size(variants)
          if (val == trim(variants(j))) then
            cfg%variant = j
            found = .true.
          end if
        end do
        if (.not. found) call usage_error("--variant '" // val // "' is not a variant of " // kname)
      case ('--out')
        if (len(val) == 0) call usage_error('--out needs a file name')
        out = val
      case ('--dump')
        if (len(val) == 0) call usage_error('--dump needs a directory')
        dump = val
      end select
      deallocate (val)
      i = i + 1
    end do
    if (.not. have_n) call usage_error('--n is required')
    if (len(out) == 0) call usage_error('--out is required')
    if (takes_ff .and. cfg%ff == 0) cfg%ff = default_ff(cfg%d)
  end subroutine parse_args

  integer(int64) function default_ff(d)
    integer(int64), intent(in) :: d
    default_ff = 64 * ((8 * d + 3 * 64 - 1) / (3 * 64))
  end function default_ff

  ! ---- driver -------------------------------------------------------------------

  real(real64) function now_s()
    integer(int64) :: count, rate
    call system_clock(count, rate)   ! int64: monotonic, ns resolution in gfortran
    now_s = real(count, real64) / real(rate, real64)
  end function now_s

  subroutine harness_main(name, variants, takes_ff, setup, poison, run, check, dump, teardown)
    character(len=*), intent(in) :: name, variants(:)
    logical, intent(in) :: takes_ff
    procedure(setup_i) :: setup
    procedure(action_i) :: poison, run, teardown
    procedure(check_i) :: check
    procedure(dump_i) :: dump
    type(harness_cfg) :: cfg
    integer(int64), allocatable :: ns(:)
    integer(int64) :: threads_arg, repeats, warmup, w, r
    character(len=:), allocatable :: out, dumpdir
    type(row_t), allocatable :: rows(:)
    integer :: nrows, in, first_row, threads, status, i, csv_unit
    real(real64) :: t0, t, first, err

    call get_prog_name(name, variants, takes_ff)
    call parse_args(variants, takes_ff, cfg, ns, threads_arg, repeats, warmup, out, dumpdir)
    if (threads_arg > 0) call omp_set_num_threads(int(threads_arg))
    threads = omp_get_max_threads()
    allocate (rows(size(ns) * repeats))
    nrows = 0
    status = 0
    if (.not. csv_open(out, takes_ff, csv_unit)) then
      flush (error_unit)
      call c_exit(1_c_int)
    end if
    do in = 1, size(ns)
      cfg%n = ns(in)
      if (.not. setup(cfg)) then
        write (error_unit, '(a,i0,a,i0,a)') prog // ': error: out of memory at n=', cfg%n, ' d=', cfg%d, &
          '; rows of smaller n are kept in ' // out
        status = 1
        exit
      end if
      call poison()
      t0 = now_s()
      call run()
      first = now_s() - t0
      do w = 1, warmup
        call poison()
        call run()
      end do
      first_row = nrows + 1
      do r = 0, repeats - 1
        call poison()
        t0 = now_s()
        call run()
        t = now_s() - t0
        nrows = nrows + 1
        rows(nrows) = row_t(cfg%n, r, t, first, 0.0_real64, .false.)
      end do
      if (cfg%check) then
        err = check()
        if (ieee_is_nan(err) .or. err /= not_checked) then
          do i = first_row, nrows
            rows(i)%rel_err = err
            rows(i)%checked = .true.
          end do
        end if
      end if
      if (.not. csv_append(csv_unit, name, trim(variants(cfg%variant)), cfg%d, cfg%ff, takes_ff, threads, &
                           rows(first_row:nrows))) status = 1
      if (len(dumpdir) > 0 .and. in == size(ns)) then
        if (.not. dump(dumpdir)) then
          write (error_unit, '(a)') prog // ': error: cannot write the dump to ' // dumpdir
          status = 1
        end if
      end if
      call teardown()
    end do
    if (.not. csv_close(csv_unit, out)) status = 1
    if (status /= 0) then
      flush (error_unit)
      call c_exit(1_c_int)
    end if
  end subroutine harness_main

  subroutine get_prog_name(name, variants, takes_ff)
    character(len=*), intent(in) :: name, variants(:)
    logical, intent(in) :: takes_ff
    character(len=:), allocatable :: a0, vlist
    integer :: j
    a0 = get_arg(0)
    j = index(a0, '/', back=.true.)
    prog = a0(j + 1:)
    if (len(prog) == 0) prog = name
    kname = name
    vlist = ''
    do j = 1, size(variants)
      if (j > 1) vlist = vlist // '|'
      vlist = vlist // trim(variants(j))
    end do
    usage = 'usage: ' // name // ' --n N[,N...] --out FILE.csv [--d D] [--threads T] [--repeats R]' // &
            ' [--warmup W] [--device cpu] [--dtype fp32] [--variant ' // vlist // &
            '] [--check] [--seed S] [--dump DIR]'
    if (takes_ff) usage = usage // ' [--ff F]'
  end subroutine get_prog_name

  ! ---- CSV ------------------------------------------------------------------------

  function fmt_real(x, digits) result(s)
    real(real64), intent(in) :: x
    integer, intent(in) :: digits
    character(len=:), allocatable :: s
    character(len=40) :: buf
    character(len=20) :: f
    if (ieee_is_nan(x)) then
      s = 'nan'
      return
    end if
    write (f, '(a,i0,a,i0,a)') '(es', digits + 10, '.', digits, 'e3)'
    write (buf, f) x
    s = trim(adjustl(buf))
  end function fmt_real

  function fmt_int(i) result(s)
    integer(int64), intent(in) :: i
    character(len=:), allocatable :: s
    character(len=24) :: buf
    write (buf, '(i0)') i
    s = trim(buf)
  end function fmt_int

  ! env values such as OMP_PLACES="{0,1},{2,3}" hold commas: quote per RFC 4180
  function csv_env(var) result(s)
    character(len=*), intent(in) :: var
    character(len=:), allocatable :: s, v
    integer :: length, stat, i
    call get_environment_variable(var, length=length, status=stat)
    s = ''
    if (stat /= 0 .or. length == 0) return
    allocate (character(len=length) :: v)
    call get_environment_variable(var, v)
    if (scan(v, ',"' // achar(10) // achar(13)) == 0) then
      s = v
      return
    end if
    s = '"'
    do i = 1, len(v)
      if (v(i:i) == '"') s = s // '"'
      s = s // v(i:i)
    end do
    s = s // '"'
  end function csv_env

  ! The CSV is FILE.tmp while the kernel runs: each n's rows are appended and
  ! flushed as soon as measured (a job stopped by its walltime, a cancel or OOM
  ! leaves the finished n for the ledger); it is renamed to FILE only at the end,
  ! so a killed job never leaves a file that looks complete.
  logical function csv_open(path, takes_ff, u)
    character(len=*), intent(in) :: path
    logical, intent(in) :: takes_ff
    integer, intent(out) :: u
    integer :: ios
    character(len=:), allocatable :: line
    csv_open = .false.
    open (newunit=u, file=path // '.tmp', status='replace', action='write', iostat=ios)
    if (ios /= 0) then
      write (error_unit, '(a)') prog // ': error: cannot write ' // path // '.tmp'
      return
    end if
    line = 'kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,first_call_s,' // &
           'rel_err,gpu_model,omp_proc_bind,omp_places,l2_flush,backend'
    if (takes_ff) line = line // ',ff'
    write (u, '(a)', iostat=ios) line
    flush (u)
    csv_open = ios == 0
  end function csv_open

  ! the rows of one n, then flush: they survive a kill from here on
  logical function csv_append(u, name, variant, d, ff, takes_ff, threads, rows)
    integer, intent(in) :: u
    character(len=*), intent(in) :: name, variant
    integer(int64), intent(in) :: d, ff
    logical, intent(in) :: takes_ff
    integer, intent(in) :: threads
    type(row_t), intent(in) :: rows(:)
    integer :: ios, i
    character(len=:), allocatable :: line, bind, places, err
    bind = csv_env('OMP_PROC_BIND')
    places = csv_env('OMP_PLACES')
    ios = 0
    do i = 1, size(rows)
      err = ''
      if (rows(i)%checked) err = fmt_real(rows(i)%rel_err, 6)
      line = name // ',fortran,' // variant // ',cpu,fp32,' // fmt_int(rows(i)%n) // ',' // &
             fmt_int(d) // ',' // fmt_int(int(threads, int64)) // ',' // fmt_int(rows(i)%repeat) // ',' // &
             fmt_real(rows(i)%time_s, 9) // ',' // fmt_real(rows(i)%first_call_s, 9) // ',' // &
             err // ',,' // bind // ',' // places // ',0,'
      if (takes_ff) line = line // ',' // fmt_int(ff)
      if (ios == 0) write (u, '(a)', iostat=ios) line
    end do
    flush (u)
    csv_append = ios == 0
  end function csv_append

  logical function csv_close(u, path)
    integer, intent(in) :: u
    character(len=*), intent(in) :: path
    integer :: ios
    csv_close = .false.
    close (u, iostat=ios)
    if (ios /= 0) then
      write (error_unit, '(a)') prog // ': error: cannot write ' // path // '.tmp'
      return
    end if
    if (c_rename(path // '.tmp' // c_null_char, path // c_null_char) /= 0) then
      write (error_unit, '(a)') prog // ': error: cannot rename ' // path // '.tmp to ' // path
      return
    end if
    csv_close = .true.
  end function csv_close

  ! ---- random inputs ----------------------------------------------------------------
  ! lowbias32 in int64 arithmetic, bit-identical to mix32() in harness.c

  pure integer(int64) function mul32(x, c)
    integer(int64), intent(in) :: x, c
    integer(int64), parameter :: m32 = 4294967295_int64
    mul32 = iand(x * iand(c, 65535_int64) + ishft(iand(x * ishft(c, -16), 65535_int64), 16), m32)
  end function mul32

  pure integer(int64) function mix32(x0)
    integer(int64), intent(in) :: x0
    integer(int64) :: x
    x = ieor(x0, ishft(x0, -16))
    x = mul32(x, 2146121005_int64)      ! 0x7feb352d
    x = ieor(x, ishft(x, -15))
    x = mul32(x, 2221713035_int64)      ! 0x846ca68b
    mix32 = ieor(x, ishft(x, -16))
  end function mix32

  pure real(real64) function normal_at(seed, stream, idx)
    integer(int64), intent(in) :: seed, stream, idx
    integer(int64), parameter :: m32 = 4294967295_int64
    integer(int64) :: key, i1, i2
    real(real64) :: u1, u2
    key = mix32(ieor(seed, mix32(iand(mul32(stream, 2654435769_int64) + 1663821227_int64, m32))))
    i1 = 2 * idx
    i2 = 2 * idx + 1
    u1 = (real(bits_at(key, i1), real64) + 0.5_real64) * 2.0_real64**(-32)
    u2 = real(bits_at(key, i2), real64) * 2.0_real64**(-32)
    normal_at = sqrt(-2.0_real64 * log(u1)) * cos(6.283185307179586_real64 * u2)
  contains
    pure integer(int64) function bits_at(k, i)
      integer(int64), intent(in) :: k, i
      bits_at = mix32(ieor(iand(i, m32), mix32(iand(ishft(i, -32) + k, m32))))
    end function bits_at
  end function normal_at

  ! x(cols, rows): row r is column r.  Parallel over blocks of `chunk` rows
  ! with schedule(static), the partition the compute loop uses (first touch).
  subroutine fill_normal(x, rows, cols, chunk, seed, stream)
    integer(int64), intent(in) :: rows, cols, chunk, seed, stream
    real(real32), intent(out) :: x(cols, rows)
    integer(int64) :: b, r, c
    !$omp parallel do schedule(static) private(r, c)
    do b = 0, (rows + chunk - 1) / chunk - 1
      do r = b * chunk + 1, min((b + 1) * chunk, rows)
        do c = 1, cols
          x(c, r) = real(normal_at(seed, stream, (r - 1) * cols + c - 1), real32)
        end do
      end do
    end do
    !$omp end parallel do
  end subroutine fill_normal

  subroutine fill_nan(x, rows, cols, chunk)
    integer(int64), intent(in) :: rows, cols, chunk
    real(real32), intent(out) :: x(cols, rows)
    integer(int64) :: b, r
    real(real32) :: nan
    nan = qnan()
    !$omp parallel do schedule(static) private(r)
    do b = 0, (rows + chunk - 1) / chunk - 1
      do r = b * chunk + 1, min((b + 1) * chunk, rows)
        x(:, r) = nan
      end do
    end do
    !$omp end parallel do
  end subroutine fill_nan

  real(real32) function qnan()
    qnan = ieee_value(0.0_real32, ieee_quiet_nan)
  end function qnan

  ! ---- errors -------------------------------------------------------------------------

  subroutine rel_acc(a, out, ref, count)
    type(rel_accum), intent(inout) :: a
    integer(int64), intent(in) :: count
    real(real32), intent(in) :: out(count)
    real(real64), intent(in) :: ref(count)
    integer(int64) :: i
    do i = 1, count
      if (ieee_is_nan(out(i))) a%nan = .true.
      a%diff2 = a%diff2 + (real(out(i), real64) - ref(i))**2
      a%ref2 = a%ref2 + ref(i)**2
    end do
  end subroutine rel_acc

  real(real64) function rel_final(a)
    type(rel_accum), intent(in) :: a
    if (a%nan) then
      rel_final = ieee_value(0.0_real64, ieee_quiet_nan)
    else if (a%ref2 > 0) then
      rel_final = sqrt(a%diff2 / a%ref2)
    else
      rel_final = sqrt(a%diff2)
    end if
  end function rel_final

  real(real64) function rel_err(out, ref, count)
    integer(int64), intent(in) :: count
    real(real32), intent(in) :: out(count)
    real(real64), intent(in) :: ref(count)
    type(rel_accum) :: a
    call rel_acc(a, out, ref, count)
    rel_err = rel_final(a)
  end function rel_err

  real(real64) function rel_worst(a, b)
    real(real64), intent(in) :: a, b
    if (ieee_is_nan(a) .or. ieee_is_nan(b)) then
      rel_worst = ieee_value(0.0_real64, ieee_quiet_nan)
    else
      rel_worst = max(a, b)
    end if
  end function rel_worst

  ! ---- dump: raw little-endian float32 files + meta.json with (row-major) shapes ------

  subroutine dump_open(dir, kernel, variant, cfg)
    character(len=*), intent(in) :: dir, kernel, variant
    type(harness_cfg), intent(in) :: cfg
    integer :: ios
    integer(c_int) :: rc
    rc = c_mkdir(dir // c_null_char, int(o'777', c_int))   ! may exist already
    dump_dir = dir
    dump_count = 0
    dump_failed = .false.
    open (newunit=dump_unit, file=dir // '/meta.json', status='replace', action='write', iostat=ios)
    dump_is_open = ios == 0
    if (ios /= 0) then
      dump_failed = .true.
      return
    end if
    write (dump_unit, '(a)', advance='no') '{"kernel": "' // kernel // '", "impl": "fortran", "variant": "' // &
      variant // '", "n": ' // fmt_int(cfg%n) // ', "d": ' // fmt_int(cfg%d) // ', "ff": ' // &
      fmt_int(cfg%ff) // ', "seed": ' // fmt_int(cfg%seed) // &
      ', "dtype": "float32", "byteorder": "little", "arrays": {'
  end subroutine dump_open

  ! x holds the array in memory order; shape is given row-major (C order),
  ! i.e. reversed Fortran dimensions: a (d, n) Fortran array is [n, d].
  subroutine dump_array(name, x, shape)
    character(len=*), intent(in) :: name
    real(real32), intent(in) :: x(*)
    integer(int64), intent(in) :: shape(:)
    integer :: u, ios, i
    if (dump_failed .or. .not. dump_is_open) return
    open (newunit=u, file=dump_dir // '/' // name // '.f32', access='stream', form='unformatted', &
          status='replace', action='write', iostat=ios)
    if (ios == 0) write (u, iostat=ios) x(1:product(shape))
    if (ios /= 0) dump_failed = .true.
    close (u)
    if (dump_count > 0) write (dump_unit, '(a)', advance='no') ', '
    write (dump_unit, '(a)', advance='no') '"' // name // '": {"file": "' // name // '.f32", "shape": ['
    do i = 1, size(shape)
      if (i > 1) write (dump_unit, '(a)', advance='no') ', '
      write (dump_unit, '(a)', advance='no') fmt_int(shape(i))
    end do
    write (dump_unit, '(a)', advance='no') ']}'
    dump_count = dump_count + 1
  end subroutine dump_array

  logical function dump_close()
    if (dump_is_open) then
      write (dump_unit, '(a)') '}}'
      close (dump_unit)
      dump_is_open = .false.
    end if
    dump_close = .not. dump_failed
  end function dump_close

end module harness
